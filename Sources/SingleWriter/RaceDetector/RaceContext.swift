// Swift side of RacePlatform: who is running, what the thread is called, the call stack,
// and a lock. The platform branches live in SingleWriterAtomics (sw_diagnostics.h).
// Release builds keep only the lock, for the handler.
import SingleWriterAtomics

#if DEBUG
  /// Who runs a section: a thread, the task it is running, if any, and the actor that task
  /// is isolated to, if any.
  ///
  /// Two rules decide whether a section is the current context's own; see `isOwner(of:)`
  /// and `sharesThreadOrTask(with:)`.
  struct RaceContext {
    let thread: UInt
    /// The task's id, 0 for none, or `unknown` until a comparison needs it: looking it
    /// up is most of the cost of a check in a debug build, and usually the thread decides.
    private(set) var task: UInt
    /// The identity of the serial executor (the actor) the task runs on, 0 for none; looked
    /// up with the task.
    private(set) var executor: UInt = 0

    private static let unknown = UInt.max

    /// The running thread; its task is looked up only if needed.
    static var current: RaceContext {
      RaceContext(thread: sw_current_thread(), task: unknown)
    }

    init(thread: UInt, task: UInt) {
      self.thread = thread
      self.task = task
    }

    /// Whether a section that `other` opened is this context's, for `RaceDetector`'s
    /// named sections. One opened in a task is that task's alone, wherever it resumes:
    /// while it is suspended, the thread it began on runs other tasks, which overlap it.
    /// One opened outside any task is its thread's, and so is everything that thread runs.
    mutating func isOwner(of other: RaceContext) -> Bool {
      if other.task == 0 { return thread == other.thread }
      return resolved().task == other.task
    }

    /// Whether this context shares `other`'s thread, task or actor, for a `SingleWriter`'s
    /// own log. The container is confined to one thread or actor, so only use from another
    /// thread at once is a race. Tasks of one actor take turns, whichever threads its jobs
    /// run on, so one of them holding a proxy across an `await` while another reads is
    /// the intended use, not a race.
    mutating func sharesThreadOrTask(with other: RaceContext) -> Bool {
      if thread == other.thread { return true }
      if other.task == 0 { return false }
      resolve()
      return task == other.task || (executor != 0 && executor == other.executor)
    }

    /// This context with its task looked up, to be stored.
    mutating func resolved() -> RaceContext {
      resolve()
      return self
    }

    private mutating func resolve() {
      guard task == Self.unknown else { return }
      task = withUnsafeCurrentTask(body: Self.taskID)
      executor = task == 0 ? 0 : sw_current_executor_identity()
    }

    // An UnsafeCurrentTask is one reference to the task: its bits are an id.
    private static func taskID(_ task: UnsafeCurrentTask?) -> UInt {
      guard let task else { return 0 }
      return unsafeBitCast(task, to: UInt.self)
    }

    /// "thread 0x… "name" (main thread), task 0x…", for reports. A name the OS may have
    /// cut short (Linux keeps 15 bytes) ends in "…", so it is not taken for the whole.
    mutating func describe(_ label: ThreadLabel) -> String {
      var text = "thread " + hex(thread)
      if !label.name.isEmpty { text += " \"\(label.name)\(label.isTruncated ? "…" : "")\"" }
      if label.isMain { text += " (main thread)" }
      if resolved().task != 0 { text += ", task " + hex(task) }
      return text
    }
  }

  func hex(_ value: UInt) -> String {
    "0x" + String(value, radix: 16)
  }

  let threadLabelSlot: UInt = sw_thread_slot_create { slot in
    if let slot { Unmanaged<ThreadLabel>.fromOpaque(slot).release() }
  }

  func currentThreadLabel() -> ThreadLabel {
    var buffer = [CChar](repeating: 0, count: 256)
    let found = Int(sw_current_thread_name(&buffer, buffer.count))
    let name =
      found == SW_THREAD_NAME_NONE
      ? ""
      : String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return ThreadLabel(
      name: name, isTruncated: found == SW_THREAD_NAME_TRUNCATED, isMain: sw_is_main_thread())
  }

  /// The calling thread's stack, innermost first, without this function's frame: each
  /// frame's image and symbol, with Swift symbols demangled where the runtime can, or
  /// its image and offset.
  func currentCallStack() -> [String] {
    var frames = [UnsafeMutableRawPointer?](repeating: nil, count: 64)
    let count = Int(sw_backtrace(&frames, Int32(frames.count)))
    guard count > 1 else { return [] }
    var line = [CChar](repeating: 0, count: 1024)
    return frames[1..<count].map { frame in
      sw_describe_address(frame, &line, line.count)
      return String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
  }

  /// Writes to standard error directly: no Foundation, and no shared `FILE *`.
  func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
      bytes.withMemoryRebound(to: CChar.self) { sw_write_stderr($0.baseAddress, $0.count) }
    }
  }
#endif
