/// Two sections of one resource that overlapped on different threads, as
/// ``RaceDetector`` saw them: the section already inside, and the one entering.
///
/// `description` is one paragraph naming the resource, both sections and both
/// threads; ``callStack`` holds the entering thread's stack.
///
/// ```swift
/// RaceDetector.onRace = { report in
///   print(report)  // Race on "cache": thread 0x… entered a write section in …
///   print(report.entering.line, report.inside.line)
/// }
/// ```
public struct RaceReport: Sendable, CustomStringConvertible {
  /// One side of the race: what the section does, where it began, and on which thread.
  public struct Access: Sendable, CustomStringConvertible {
    /// Whether the section reads or writes.
    public let mode: AccessMode
    /// The file where the section began, as `#fileID` spells it.
    public let file: String
    /// The function where the section began.
    public let function: String
    /// The line where the section began.
    public let line: UInt
    /// The thread: its id, its name where the platform keeps one, and the task it
    /// was running, if any.
    public let thread: String

    /// The section in a few words: `write section in save() at App/Store.swift:12 on
    /// thread 0x…`.
    public var description: String {
      "\(mode) section in \(function) at \(file):\(line) on \(thread)"
    }
  }

  /// The name of the resource both sections claim.
  public let resource: String
  /// The section that was already inside the resource.
  public let inside: Access
  /// The section whose entry was the race: it began while `inside` had not ended.
  public let entering: Access
  /// The entering thread's call stack when the race was found, innermost frame
  /// first, or empty where the platform gives none.
  public let callStack: [String]
  /// What to do about it, when the resource's owner knows.
  let advice: String?

  init(
    resource: String, inside: Access, entering: Access, callStack: [String], advice: String?
  ) {
    self.resource = resource
    self.inside = inside
    self.entering = entering
    self.callStack = callStack
    self.advice = advice
  }

  /// One paragraph: the resource, the entering section, the section it overlaps, why
  /// that is a race, and what to do about it.
  public var description: String {
    let rule =
      entering.mode == .write
      ? "A write may not overlap any other access to the same resource."
      : "A read may not overlap a write to the same resource."
    var text = """
      Race on \(resource): \(entering.thread) entered a \(entering.mode) section in \
      \(entering.function) at \(entering.file):\(entering.line) while \(inside.thread) \
      was still inside a \(inside.mode) section begun in \(inside.function) at \
      \(inside.file):\(inside.line). \(rule)
      """
    if let advice { text += " " + advice }
    return text
  }
}
