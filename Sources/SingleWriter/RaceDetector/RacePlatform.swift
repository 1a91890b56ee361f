// Platform glue for RaceDetector: who is running, what the thread is called, the
// call stack, and a lock. Release builds keep only the lock, for the handler.
import SingleWriterAtomics

#if DEBUG
  #if canImport(Darwin)
    import Darwin
  #elseif canImport(Glibc)
    import Glibc
  #elseif canImport(Musl)
    import Musl
  #elseif canImport(ucrt)
    import ucrt
  #endif

  /// Who runs a section: a thread, and the task it is running, if any.
  ///
  /// Two contexts are the same if they share the thread or the task. A thread never
  /// races itself, and neither does a task: it runs on one thread at a time, though it
  /// may resume on another after `await`, inside the same section.
  struct RaceContext {
    let thread: UInt
    /// The task's id, 0 for none, or `unknown` until a comparison needs it: looking it
    /// up is most of the cost of a check in a debug build, and usually the thread decides.
    private(set) var task: UInt

    private static let unknown = UInt.max

    /// The running thread; its task is looked up only if needed.
    static var current: RaceContext {
      RaceContext(thread: sw_current_thread(), task: unknown)
    }

    /// Whether this context is `other`'s, whose task is known.
    mutating func isSame(as other: RaceContext) -> Bool {
      if thread == other.thread { return true }
      if other.task == 0 { return false }
      return resolved().task == other.task
    }

    /// This context with its task looked up, to be stored.
    mutating func resolved() -> RaceContext {
      if task == Self.unknown { task = withUnsafeCurrentTask(body: Self.taskID) }
      return self
    }

    // An UnsafeCurrentTask is one reference to the task: its bits are an id.
    private static func taskID(_ task: UnsafeCurrentTask?) -> UInt {
      guard let task else { return 0 }
      return unsafeBitCast(task, to: UInt.self)
    }

    /// "thread 0x… "name" (main thread), task 0x…", for reports.
    mutating func describe(_ label: ThreadLabel) -> String {
      var text = "thread " + hex(thread)
      if !label.name.isEmpty { text += " \"\(label.name)\"" }
      if label.isMain { text += " (main thread)" }
      if resolved().task != 0 { text += ", task " + hex(task) }
      return text
    }
  }

  func hex(_ value: UInt) -> String {
    "0x" + String(value, radix: 16)
  }

  /// A thread's name, read once per thread and kept in a thread-local slot: reading it
  /// costs a system call, and a report needs the name of a thread that may be busy
  /// elsewhere by then.
  final class ThreadLabel: Sendable {
    let name: String
    let isMain: Bool

    init(name: String, isMain: Bool) {
      self.name = name
      self.isMain = isMain
    }

    static var current: ThreadLabel {
      #if canImport(Darwin) || canImport(Glibc) || canImport(Musl)
        if let slot = pthread_getspecific(threadLabelKey) {
          return Unmanaged<ThreadLabel>.fromOpaque(slot).takeUnretainedValue()
        }
        let label = ThreadLabel(name: currentThreadName(), isMain: isMainThread())
        pthread_setspecific(threadLabelKey, Unmanaged.passRetained(label).toOpaque())
        return label
      #else
        return ThreadLabel(name: "", isMain: false)
      #endif
    }
  }

  #if canImport(Darwin) || canImport(Glibc) || canImport(Musl)
    let threadLabelKey: pthread_key_t = {
      var key = pthread_key_t()
      // The slot's +1 on the label is dropped when its thread exits.
      pthread_key_create(&key) { releaseThreadLabel($0) }
      return key
    }()

    func releaseThreadLabel(_ slot: UnsafeMutableRawPointer?) {
      if let slot { Unmanaged<ThreadLabel>.fromOpaque(slot).release() }
    }
  #endif

  // Glibc's module map leaves out <execinfo.h> and the _GNU_SOURCE thread-name call,
  // so on Linux they are looked up once by name; missing ones leave the report plainer.
  #if canImport(Glibc) || canImport(Musl)
    typealias BacktraceFunction =
      @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, Int32) -> Int32
    typealias BacktraceSymbolsFunction =
      @convention(c) (UnsafePointer<UnsafeMutableRawPointer?>?, Int32) ->
      UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
    typealias ThreadNameFunction =
      @convention(c) (pthread_t, UnsafeMutablePointer<CChar>?, Int) -> Int32
    typealias ThreadIDFunction = @convention(c) () -> Int32

    let cBacktrace = lookUp("backtrace", as: BacktraceFunction.self)
    let cBacktraceSymbols = lookUp("backtrace_symbols", as: BacktraceSymbolsFunction.self)
    let cThreadName = lookUp("pthread_getname_np", as: ThreadNameFunction.self)
    let cThreadID = lookUp("gettid", as: ThreadIDFunction.self)

    func lookUp<F>(_ symbol: String, as type: F.Type) -> F? {
      dlsym(nil, symbol).map { unsafeBitCast($0, to: type) }
    }
  #endif

  typealias DemangleFunction =
    @convention(c) (
      UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?,
      UInt32
    ) -> UnsafeMutablePointer<CChar>?

  #if canImport(Darwin)
    // RTLD_DEFAULT is a macro Swift does not import.
    let cDemangle = dlsym(UnsafeMutableRawPointer(bitPattern: -2), "swift_demangle").map {
      unsafeBitCast($0, to: DemangleFunction.self)
    }
  #elseif canImport(Glibc) || canImport(Musl)
    let cDemangle = lookUp("swift_demangle", as: DemangleFunction.self)
  #endif

  func currentThreadName() -> String {
    #if canImport(Darwin) || canImport(Glibc) || canImport(Musl)
      var buffer = [CChar](repeating: 0, count: 64)
      #if canImport(Darwin)
        guard pthread_getname_np(pthread_self(), &buffer, buffer.count) == 0 else { return "" }
      #else
        guard let cThreadName, cThreadName(pthread_self(), &buffer, buffer.count) == 0 else {
          return ""
        }
      #endif
      return String(
        decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    #else
      return ""
    #endif
  }

  func isMainThread() -> Bool {
    #if canImport(Darwin)
      return pthread_main_np() != 0
    #elseif canImport(Glibc) || canImport(Musl)
      // On Linux the main thread's kernel id is the process id.
      guard let cThreadID else { return false }
      return cThreadID() == getpid()
    #else
      return false
    #endif
  }

  /// The calling thread's stack, innermost first, without this function's frame, with
  /// Swift symbols demangled where the runtime can.
  func currentCallStack() -> [String] {
    #if canImport(Darwin) || canImport(Glibc) || canImport(Musl)
      var frames = [UnsafeMutableRawPointer?](repeating: nil, count: 64)
      #if canImport(Darwin)
        let count = backtrace(&frames, Int32(frames.count))
        guard count > 1, let symbols = backtrace_symbols(&frames, count) else { return [] }
      #else
        guard let cBacktrace, let cBacktraceSymbols else { return [] }
        let count = cBacktrace(&frames, Int32(frames.count))
        guard count > 1, let symbols = cBacktraceSymbols(&frames, count) else { return [] }
      #endif
      defer { free(symbols) }
      return (1..<Int(count)).map { index in
        symbols[index].map { demangleSymbols(in: String(cString: $0)) } ?? "?"
      }
    #else
      return []
    #endif
  }

  /// Replaces the mangled Swift symbol in one `backtrace_symbols` line with its
  /// demangled form.
  func demangleSymbols(in line: String) -> String {
    #if canImport(Darwin) || canImport(Glibc) || canImport(Musl)
      guard let cDemangle,
        let start = line.indices.first(where: { line[$0...].hasPrefix("$s") })
      else { return line }
      let end = line[start...].firstIndex { $0 == "+" || $0 == ")" || $0 == " " } ?? line.endIndex
      let mangled = String(line[start..<end])
      guard let demangled = cDemangle(mangled, mangled.utf8.count, nil, nil, 0) else {
        return line
      }
      defer { free(demangled) }
      var result = line
      result.replaceSubrange(start..<end, with: String(cString: demangled))
      return result
    #else
      return line
    #endif
  }

  /// Writes to file descriptor 2 directly: no Foundation, and no shared `FILE *`.
  func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
      #if canImport(ucrt)
        _ = _write(2, bytes.baseAddress, UInt32(bytes.count))
      #else
        _ = write(2, bytes.baseAddress, bytes.count)
      #endif
    }
  }
#endif

/// A mutex at a stable address, for the detector's own bookkeeping.
struct RaceMutex: @unchecked Sendable {
  // Sendable: the pointee is a C11 atomic word, made to be shared between threads.
  let word: UnsafeMutablePointer<sw_mutex>

  init() {
    word = .allocate(capacity: 1)
    word.initialize(to: sw_mutex())
  }

  func lock() { sw_mutex_lock(word) }
  func unlock() { sw_mutex_unlock(word) }

  /// Frees the word; only for an owner that is itself being freed.
  func destroy() {
    word.deinitialize(count: 1)
    word.deallocate()
  }
}
