/// What ``RaceDetector`` found: two sections of one resource that overlapped on
/// different threads, or, in a lock-order report, two locks taken in both orders.
///
/// `description` is one paragraph naming what was found, both sites and both threads;
/// ``callStack`` holds the reporting thread's stack.
///
/// ```swift
/// RaceDetector.onRace = { report in
///   print(report)  // Race on "cache": thread 0x… entered a write section in …
///   print(report.entering.line, report.inside.line)
/// }
/// ```
///
/// A lock-order report (``kind`` is not ``Kind/race``) also carries ``lockOrder``, the
/// order just taken, and, for an inversion, ``oppositeOrder``, the one seen before. Its
/// ``resource`` names the locks, ``inside`` is where this thread took the lock it holds,
/// and ``entering`` where it takes the other.
public struct RaceReport: Sendable, CustomStringConvertible {
  /// What a report is about.
  public enum Kind: Sendable, Hashable {
    /// Two threads inside conflicting sections of one resource at once.
    case race
    /// Two locks taken in both orders, each while holding the other: a potential
    /// deadlock, found even if the two orders never ran at the same time.
    case lockOrderInversion
    /// A queued write, run on a thread that serves its container's queue, takes a lock
    /// that the thread took before it began serving: the write runs inside another
    /// code's critical section, and with any lock that is not reentrant it would wait
    /// forever for itself.
    case servedWriteTakesHeldLock
  }

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

  /// Where a lock was taken, in a lock-order report.
  public struct Acquisition: Sendable, CustomStringConvertible {
    /// The lock: its type and address, as in `ReentrantMutex 0x600000c04000`.
    public let lock: String
    /// The file of the call that took it, as `#fileID` spells it.
    public let file: String
    /// The function that took it.
    public let function: String
    /// The line of the call that took it.
    public let line: UInt
    /// The thread, or the task, that took it.
    public let thread: String

    /// The acquisition in a few words: `ReentrantMutex 0x… taken in save() at
    /// App/Store.swift:12 on thread 0x…`.
    public var description: String {
      "\(lock) taken in \(function) at \(file):\(line) on \(thread)"
    }
  }

  /// Two locks taken one inside the other: `taken` while `held` was still held.
  public struct LockOrder: Sendable, CustomStringConvertible {
    /// The lock taken first, and where.
    public let held: Acquisition
    /// The lock taken second, and where, while `held` was still held.
    public let taken: Acquisition

    /// Both acquisitions, in order.
    public var description: String { "\(held), then \(taken)" }
  }

  /// What was found: a race, or a potential deadlock.
  public let kind: Kind
  /// The name of the resource both sections claim; in a lock-order report, the locks.
  public let resource: String
  /// The section that was already inside the resource; in a lock-order report, where
  /// this thread took the lock it holds.
  public let inside: Access
  /// The section whose entry was the race: it began while `inside` had not ended; in a
  /// lock-order report, where this thread takes the other lock.
  public let entering: Access
  /// In a lock-order report, the order this thread just took: for
  /// ``Kind/servedWriteTakesHeldLock``, the lock the serving thread took, then the same
  /// lock taken by the served write. `nil` for a race.
  public let lockOrder: LockOrder?
  /// For ``Kind/lockOrderInversion``, the opposite order, seen earlier, perhaps on
  /// another thread; otherwise `nil`.
  public let oppositeOrder: LockOrder?
  /// The reporting thread's call stack when the problem was found, innermost frame
  /// first, or empty where the platform gives none.
  public let callStack: [String]
  /// What to do about it, when the resource's owner knows.
  let advice: String?

  init(
    resource: String, inside: Access, entering: Access, callStack: [String], advice: String?
  ) {
    self.kind = .race
    self.resource = resource
    self.inside = inside
    self.entering = entering
    self.lockOrder = nil
    self.oppositeOrder = nil
    self.callStack = callStack
    self.advice = advice
  }

  /// A lock-order report: `order` was just taken; `opposite`, for an inversion, before.
  init(
    kind: Kind, resource: String, order: LockOrder, opposite: LockOrder?,
    callStack: [String], advice: String?
  ) {
    func access(_ acquisition: Acquisition) -> Access {
      Access(
        mode: .write, file: acquisition.file, function: acquisition.function,
        line: acquisition.line, thread: acquisition.thread)
    }
    self.kind = kind
    self.resource = resource
    self.inside = access(order.held)
    self.entering = access(order.taken)
    self.lockOrder = order
    self.oppositeOrder = opposite
    self.callStack = callStack
    self.advice = advice
  }

  /// One paragraph: the resource, the entering section, the section it overlaps, why
  /// that is a race, and what to do about it; or the two locks, both orders and where
  /// each was taken.
  public var description: String {
    var text: String
    switch kind {
    case .race:
      let rule =
        entering.mode == .write
        ? "A write may not overlap any other access to the same resource."
        : "A read may not overlap a write to the same resource."
      text = """
        Race on \(resource): \(entering.thread) entered a \(entering.mode) section in \
        \(entering.function) at \(entering.file):\(entering.line) while \(inside.thread) \
        was still inside a \(inside.mode) section begun in \(inside.function) at \
        \(inside.file):\(inside.line). \(rule)
        """
    case .lockOrderInversion:
      let order = lockOrder!
      text = """
        Potential deadlock between \(resource), taken in both orders. Now: \(order). \
        Before: \(oppositeOrder.map { "\($0)" } ?? "the opposite order"). A thread \
        holding either one and waiting for the other can wait forever for a thread in \
        the opposite order; no deadlock needs to have happened. Take the two in one order \
        everywhere, or release the first before taking the second.
        """
    case .servedWriteTakesHeldLock:
      let order = lockOrder!
      text = """
        Potential deadlock on \(resource): \(order.held.thread) took it in \
        \(order.held.function) at \(order.held.file):\(order.held.line), then, still \
        holding it, ran queued writes for others, and one of them takes it again in \
        \(order.taken.function) at \(order.taken.file):\(order.taken.line). A thread that \
        ends a checkout or calls writeNext may run other threads' queued writes, inside the \
        locks it holds: with a lock that is not reentrant that write waits forever, and a \
        reentrant one lets it into a critical section that is not its own. Do not end a \
        checkout or call writeNext while holding a lock that queued writes take.
        """
    }
    if let advice { text += " " + advice }
    return text
  }
}
