import Dispatch
import Foundation
import SingleWriter
import SingleWriterAtomics
import Testing

// The helpers these tests share, copied from SingleWriterTests' Support.swift and attack
// pass (a test target cannot import another): threads and polling, child processes, and
// values the companions hold.

/// Runs `body` on a fresh thread with the given stack size and returns its result.
func runOnThread<R: Sendable>(
  stackSize: Int, _ body: @escaping @Sendable () -> R
) async -> R {
  await withCheckedContinuation { continuation in
    let thread = Thread { continuation.resume(returning: body()) }
    thread.stackSize = stackSize
    thread.start()
  }
}

/// A value behind an `NSLock`, for the tests' own bookkeeping across threads.
final class Locked<Value>: @unchecked Sendable {
  // Sendable: `value` is only touched under `lock`.
  private let lock = NSLock()
  private var value: Value
  init(_ value: Value) { self.value = value }
  func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    try lock.withLock { try body(&value) }
  }
}

/// An integer that threads share, for start lines and overlap counts; a stand-in for
/// `Atomic<Int>`, which needs macOS 15 and iOS 18. A lock orders at least as strongly as
/// the sequentially consistent operations it replaces.
final class Counter: Sendable {
  private let value: Locked<Int>

  init(_ value: Int = 0) { self.value = Locked(value) }

  /// Adds `amount` and returns the new value.
  @discardableResult
  func add(_ amount: Int) -> Int {
    value.withLock { value in
      value += amount
      return value
    }
  }

  /// Subtracts `amount` and returns the new value.
  @discardableResult
  func subtract(_ amount: Int) -> Int { add(-amount) }

  func load() -> Int { value.withLock { $0 } }

  func store(_ newValue: Int) { value.withLock { $0 = newValue } }

  /// Raises the value to `candidate` if that is larger, as one step.
  func raise(to candidate: Int) { value.withLock { $0 = max($0, candidate) } }
}

/// A flag that threads share: set once, read by everyone.
final class SharedFlag: Sendable {
  private let value = Locked(false)
  var isSet: Bool { value.withLock { $0 } }
  func set() { value.withLock { $0 = true } }
}

/// Runs `body(index)` on `count` fresh threads, released together once all have started,
/// and returns when every one has returned.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
  let arrived = Counter()
  let go = DispatchSemaphore(value: 0)
  await withTaskGroup(of: Void.self) { group in
    for index in 0..<count {
      group.addTask {
        await runOnThread(stackSize: 1 << 20) {
          if arrived.add(1) == count {
            for _ in 1..<count { go.signal() }
          } else {
            go.wait()
          }
          body(index)
        }
      }
    }
  }
}

/// Polls `condition` every 100 µs, blocking this thread, for up to `seconds`; false if it
/// never held. A watchdog, not a timing, as for `waitUntil`.
func eventually(atMost seconds: Double = 60, _ condition: () -> Bool) -> Bool {
  let end = attackNow() + UInt64(seconds * 1e9)
  while !condition() {
    if attackNow() >= end { return false }
    usleep(100)
  }
  return true
}

/// The monotonic clock, in nanoseconds.
func attackNow() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Exits the process with status 3 after `seconds` once the library has printed a message
/// (a "has waited 1 s" warning, say), or after `attackHangBound` if it has printed none: a
/// hang shows as exit code 3. A child that ends by design after its warning ends at
/// `seconds`; one a loaded machine slows down is not cut short, so load cannot fail it.
func attackWatchdog(_ seconds: Double, _ label: String) {
  let start = attackNow()
  Thread.detachNewThread {
    Thread.sleep(forTimeInterval: seconds)
    let end = start + UInt64(max(seconds, attackHangBound) * 1e9)
    while sw_printed_error_count() == 0, attackNow() < end { usleep(10_000) }
    let waited = Double((attackNow() - start) / 1_000_000) / 1_000
    attackErr("WATCHDOG: \(label) hung after \(waited) s\n")
    _exit(3)
  }
}

/// How long a child that printed nothing may run before its watchdog calls it hung: far
/// past anything a loaded machine does to a test that passes.
let attackHangBound: Double = 120

/// Writes `text` to standard error.
func attackErr(_ text: String) {
  FileHandle.standardError.write(Data(text.utf8))
}

/// The text a child wrote to standard error.
func standardError(_ result: ExitTest.Result?) -> String {
  result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
}

/// A child's exit status and the end of its standard error, for a failure's message.
func exitReport(_ result: ExitTest.Result?) -> String {
  guard let result else { return "no result" }
  return "status: \(result.exitStatus), stderr: \(standardError(result).suffix(1500))"
}

/// A child's result, expected to end with `status`.
func expectExit(
  _ result: ExitTest.Result?, _ status: CInt, sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(
    result?.exitStatus == .exitCode(status), "\(exitReport(result))",
    sourceLocation: sourceLocation)
}

/// Two fields that every write keeps equal, so a torn read shows as `a != b`.
struct Pair: Sendable, Equatable {
  var a = 0
  var b = 0
  mutating func bump() {
    a += 1
    b += 1
  }
}

/// Ends a child: with status 1 and `message` after "BREAK" when `broken`, else with 0.
func atkEnd(breakingIf broken: Bool, _ message: @autoclosure () -> String = "") -> Never {
  if broken {
    attackErr("BREAK\(message().isEmpty ? "" : ": \(message())")\n")
    exit(1)
  }
  exit(0)
}

/// A child's result, expected to hold no "BREAK" line (see `atkDiag`).
func expectNoBreak(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
  atkDiag(result)
  #expect(
    !standardError(result).contains("BREAK"), "\(exitReport(result))",
    sourceLocation: sourceLocation)
}

/// The exit condition a test expects, or, for diagnosing a failure, the one named by
/// the environment variable ATK_EXPECT ("sigill", "sigtrap", or an exit code), so that
/// the child's standard error is shown.
func atkExpect(_ normal: ExitTest.Condition) -> ExitTest.Condition {
  switch ProcessInfo.processInfo.environment["ATK_EXPECT"] {
  case "sigill"?: return .signal(SIGILL)
  case "sigtrap"?: return .signal(SIGTRAP)
  case let code?: return .exitCode(CInt(code) ?? 0)
  case nil: return normal
  }
}

/// With ATK_EXPECT set, shows a child's standard error.
func atkDiag(_ result: ExitTest.Result?) {
  if ProcessInfo.processInfo.environment["ATK_EXPECT"] != nil { attackErr(standardError(result)) }
}

/// Blocks until `condition` holds; stops the child with a BREAK naming `what` if it does
/// not within `seconds`.
func coaAwait(_ seconds: Double = 60, _ what: @autoclosure () -> String, _ condition: () -> Bool) {
  if !eventually(atMost: seconds, condition) { atkEnd(breakingIf: true, "stuck: \(what())") }
}

/// Takes `a`'s writer on a thread of its own and returns it, so that this thread is not
/// marked as its holder (its writes are then no debt of the release).
func coaTakeElsewhere<V: Sendable>(_ a: ThreadSafeSingleWriter<V>) -> ThreadSafeWriterProxy<V> {
  let box = Locked<ThreadSafeWriterProxy<V>?>(nil)
  let done = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    box.withLock { $0 = a.writer }
    done.signal()
  }
  done.wait()
  let proxy = box.withLock { $0.take() }
  precondition(proxy != nil, "the writer was not free")
  return proxy!
}

/// Runs `body` on a fresh plain thread (no task), of one fixed stack size, and waits for
/// it to return.
func atkOnFreshThread<R: Sendable>(_ body: @escaping @Sendable () -> R) -> R {
  let done = DispatchSemaphore(value: 0)
  let result = Locked<R?>(nil)
  let thread = Thread {
    result.withLock { $0 = body() }
    done.signal()
  }
  thread.stackSize = 1 << 20
  thread.start()
  done.wait()
  return result.withLock { $0! }
}
