import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// The helpers the tests share: tags, threads and polling, containers held or queued on
// from elsewhere, child processes, values and objects the containers hold, and the
// priority gate's probes.

// MARK: - Tags

extension Tag {
  /// A test whose verdict or length rests on the wall clock: a warning due after a second,
  /// the server's millisecond, a window of seconds in which a stream must not starve a wait,
  /// a schedule forced by sleeps. Every other test waits for states, not for time. Each
  /// also carries `.unlessRealTimeSkipped`, so that a quick local run can leave them out
  /// with `SINGLEWRITER_SKIP_REAL_TIME=1 swift test`; CI runs them all.
  @Tag static var realTime: Self
}

extension Trait where Self == ConditionTrait {
  /// Skips a `.realTime` test when the environment sets SINGLEWRITER_SKIP_REAL_TIME. (This
  /// toolchain's `swift test --skip` matches test IDs only; `--skip tag:realTime` comes
  /// with a later Swift Testing.)
  static var unlessRealTimeSkipped: Self {
    .enabled(
      if: ProcessInfo.processInfo.environment["SINGLEWRITER_SKIP_REAL_TIME"] == nil,
      "SINGLEWRITER_SKIP_REAL_TIME is set")
  }
}

// MARK: - Threads and polling

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

/// Threads of their own that each repeat `step` until `stop()` (or, given `seconds`, until
/// that long has passed, so that a test whose code under test never lets go fails instead
/// of hanging). `stop()` returns once every thread has finished its last step.
final class Repeating: Sendable {
  private let stopped = SharedFlag()
  private let finished = DispatchGroup()
  private let end: UInt64

  init(threads: Int = 1, seconds: Double? = nil, _ step: @escaping @Sendable () -> Void) {
    end = seconds.map { attackNow() + UInt64($0 * 1e9) } ?? .max
    for _ in 0..<threads {
      finished.enter()
      Thread.detachNewThread { [stopped, finished, end] in
        while !stopped.isSet, attackNow() < end { step() }
        finished.leave()
      }
    }
  }

  /// Whether the threads have been told to stop, or their `seconds` have run out.
  var isStopped: Bool { stopped.isSet || attackNow() >= end }

  func stop() {
    stopped.set()
    finished.wait()
  }
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

/// A serial executor that runs its jobs on one thread of its own, never on the pool that
/// runs the tests: an actor on it moves a task to another thread.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ExecutorJob
final class OwnThreadExecutor: SerialExecutor {
  private let ready = DispatchSemaphore(value: 0)
  private let jobs = Locked<[UnownedJob]>([])

  init() {
    Thread { [self] in
      while true {
        ready.wait()
        let job = jobs.withLock { $0.removeFirst() }
        job.runSynchronously(on: asUnownedSerialExecutor())
      }
    }.start()
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    jobs.withLock { $0.append(job) }
    ready.signal()
  }
}

/// Polls `condition` every millisecond until it holds; records an issue, and returns false,
/// if it still does not after `seconds` worth of polls. A watchdog, not a timing: each
/// condition awaited here comes true within milliseconds when the code is right. It counts
/// polls, not wall time, so that a stretch in which other tests keep every thread of the
/// cooperative pool busy (ThreadSanitizer's parallel run) stalls the poller and what it
/// waits for alike, instead of using up its time.
@discardableResult
func waitUntil(
  atMost seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation,
  _ condition: () -> Bool
) async -> Bool {
  var polls = Int(seconds * 1_000)
  while !condition() {
    if polls == 0 {
      Issue.record("still not so after \(seconds) s of polls", sourceLocation: sourceLocation)
      return false
    }
    polls -= 1
    try? await Task.sleep(for: .milliseconds(1))
  }
  return true
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

/// Blocks this thread until `task` has ended: for a child's code that must not suspend.
func blockUntilDone<Success: Sendable>(_ task: Task<Success, Never>) {
  let done = DispatchSemaphore(value: 0)
  Task {
    _ = await task.value
    done.signal()
  }
  done.wait()
}

/// Busy-waits `nanoseconds`, without giving up the CPU.
func attackSpin(_ nanoseconds: UInt64) {
  let end = attackNow() &+ nanoseconds
  while attackNow() < end {}
}

/// The monotonic clock, in nanoseconds.
func attackNow() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// The CPU time the calling thread has used, in nanoseconds. Unlike the wall clock it
/// stands still while the thread is preempted, so a bound on it holds on a loaded machine:
/// what a call spent serving others, not how long the scheduler kept it waiting.
func threadCPUTime() -> UInt64 {
  var time = timespec()
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
  return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// The most CPU time a release may spend serving other threads' writes, whose promise is
/// about a millisecond: far above what chaos mode's injected yields add, far below what a
/// server that never hands off spends while producers outpace it for a watchdog's 120 s.
let servingCPUBound: UInt64 = 500_000_000

// MARK: - Containers held, queued and waited for elsewhere

/// Lets go of `held` on another thread after `seconds`, so that a wait behind it ends once
/// any warning is due.
/// Releases `held` on another thread once the library has printed a message (the "has
/// waited 1 s" warning a test waits for), or after `attackHangBound`: a warning that load
/// delays past a fixed release time would never be printed, since the wait it is about
/// would have ended.
func releaseAfterAWarning<Value: Sendable>(_ held: Locked<ThreadSafeWriterProxy<Value>?>) {
  let printed = sw_printed_error_count()
  let end = attackNow() + UInt64(attackHangBound * 1e9)
  Thread.detachNewThread {
    while sw_printed_error_count() == printed, attackNow() < end { usleep(10_000) }
    held.withLock { $0 = nil }
  }
}

func releaseLater<Value: Sendable>(
  _ held: Locked<ThreadSafeWriterProxy<Value>?>, after seconds: Double
) {
  Thread.detachNewThread {
    Thread.sleep(forTimeInterval: seconds)
    held.withLock { $0 = nil }
  }
}

/// Holds `box`'s writer on another thread for `seconds` (by default until the process
/// ends); returns once it is held.
func holdWriterElsewhere<Value: Sendable>(
  _ box: ThreadSafeSingleWriter<Value>, for seconds: Double = 60
) {
  let taken = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    let held = box.writer
    precondition(held != nil, "the writer was not free")
    taken.signal()
    withExtendedLifetime(held) { Thread.sleep(forTimeInterval: seconds) }
  }
  taken.wait()
}

/// Queues `body` on `box` from another thread, and returns once it is queued.
func writeNextFromAnotherThread<Value: Sendable>(
  _ box: ThreadSafeSingleWriter<Value>,
  _ body: @escaping @Sendable (ThreadSafeWriterProxy<Value>) -> Void
) {
  let queued = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    box.writeNext(body)
    queued.signal()
  }
  queued.wait()
}

/// Lets `queue` queue writes behind `box`'s writer, held here (the gate armed first when
/// `gated`), then releases it: this thread serves them, holding the gate if armed.
func serveQueued(_ box: ThreadSafeSingleWriter<Int>, gated: Bool = false, _ queue: () -> Void) {
  let held = box.writer
  precondition(held != nil, "the writer was not free")
  if gated { box.lock.wantGate() }
  // Pinned: in release builds ARC could end the checkout before `queue` runs otherwise.
  withExtendedLifetime(held) { queue() }
}

/// A task that checks `box` out and adds `amount` through the proxy: true if it got the
/// writer, false if its cancellation came first.
func checkoutTask(_ box: ThreadSafeSingleWriter<Int>, adding amount: Int = 1) -> Task<Bool, Never> {
  Task {
    guard let proxy = try? await box.checkout() else { return false }
    proxy.write += amount
    return true
  }
}

// MARK: - Child processes

// Anything that could hang runs in an exit test with a watchdog that exits with status 3
// and prints "WATCHDOG", so that a hang is reported as such instead of hanging the runner.

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

/// A child's result, expected to be a stop with the message that contains `phrase`.
func expectStop(
  _ result: ExitTest.Result?, saying phrase: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(
    result?.exitStatus != .exitCode(3), "hung: \(exitReport(result))",
    sourceLocation: sourceLocation)
  #expect(
    standardError(result).contains(phrase), "\(exitReport(result))",
    sourceLocation: sourceLocation)
}

/// A child's result, expected to end with `status`.
func expectExit(
  _ result: ExitTest.Result?, _ status: CInt, sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(
    result?.exitStatus == .exitCode(status), "\(exitReport(result))",
    sourceLocation: sourceLocation)
}

// MARK: - Values

/// Two fields that every write keeps equal, so a torn read shows as `a != b`.
struct Pair: Sendable, Equatable {
  var a = 0
  var b = 0
  mutating func bump() {
    a += 1
    b += 1
  }
}

/// An immutable reference, for values with references under TSan.
final class Ref: Sendable {
  let n: Int
  let tag: String
  init(_ n: Int) {
    self.n = n
    self.tag = "ref-\(n)"
  }
}

/// A value with an array, a string and a reference that every write keeps in step, so a
/// torn read shows as `!isWhole`.
struct Rich: Sendable {
  var count = 0
  var items: [Int] = []
  var name = "0"
  var ref = Ref(0)
  mutating func bump() {
    count += 1
    items.append(count)
    name = String(count)
    ref = Ref(count)
  }
  var isWhole: Bool {
    items.count == count && name == String(count) && ref.n == count && ref.tag == "ref-\(count)"
      && (count == 0 || items.last == count)
  }
}

/// A thread-safe tally for the tests' own bookkeeping.
final class Tally: @unchecked Sendable {
  // Sendable: every access is under `lock`.
  private let lock = NSLock()
  private var counts: [String: Int] = [:]
  private var inside = 0
  private(set) var maxInside = 0

  func add(_ key: String, _ n: Int = 1) { lock.withLock { counts[key, default: 0] += n } }
  subscript(key: String) -> Int { lock.withLock { counts[key, default: 0] } }
  func enter() {
    lock.withLock {
      inside += 1
      maxInside = max(maxInside, inside)
    }
  }
  func leave() { lock.withLock { inside -= 1 } }
}

/// Appends strings from any thread, in the order they arrive.
final class Log: Sendable {
  private let items = Locked<[String]>([])
  func append(_ item: String) { items.withLock { $0.append(item) } }
  var all: [String] { items.withLock { $0 } }
}

// MARK: - Objects that act in their deinit

/// A weak reference a `@Sendable` closure can fill in, from the queue's thread.
final class WeakProxy<Value>: @unchecked Sendable {
  // Sendable: touched only by queued writes, which run one at a time, or on one thread.
  weak var proxy: ThreadSafeWriterProxy<Value>?
}

/// Calls `withWriter` on its container from its `deinit`, adding `amount`.
final class CallsBack: Sendable {
  let box: ThreadSafeSingleWriter<Int>
  let amount: Int
  init(_ box: ThreadSafeSingleWriter<Int>, adding amount: Int = 1) {
    self.box = box
    self.amount = amount
  }
  deinit { box.withWriter { $0 += amount } }
}

/// Keeps a proxy; its deinit drops it (which hands the checkout back to the queue run on
/// this thread) and then calls back into the container: with `withWriter`, or, queueing,
/// with `writeNext`.
final class HoldsProxyThenCallsBack: @unchecked Sendable {
  // Sendable: `proxy` is set by the queued write that keeps it, before anyone frees this.
  let box: ThreadSafeSingleWriter<Int>
  let queueing: Bool
  var proxy: ThreadSafeWriterProxy<Int>?
  init(_ box: ThreadSafeSingleWriter<Int>, queueing: Bool = false) {
    self.box = box
    self.queueing = queueing
  }
  deinit {
    proxy = nil
    if queueing { box.writeNext { $0.write += 100 } } else { box.withWriter { $0 += 100 } }
  }
}

/// Sleeps in its deinit, after dropping the proxy it may keep (which hands the checkout
/// back to the run on this thread): widens the window between a queued write's end and
/// what the serving thread does next.
final class SleepsInDeinit: @unchecked Sendable {
  // Sendable: `proxy` is set by the queued write that keeps it, before anyone frees this.
  var proxy: ThreadSafeWriterProxy<Int>?
  let milliseconds: UInt32
  init(_ milliseconds: UInt32) { self.milliseconds = milliseconds }
  deinit {
    proxy = nil
    usleep(milliseconds * 1_000)
  }
}

/// Writes through the kept proxy it holds, then drops it, on whatever thread frees this.
final class DropsProxyOnDeinit: @unchecked Sendable {
  // Sendable: `proxy` is set by the queued write that keeps it, before anyone frees this.
  var proxy: ThreadSafeWriterProxy<Int>?
  deinit {
    proxy?.write += 1
    proxy = nil
  }
}

// MARK: - The priority gate

/// `nil` if the gate is free: no holder recorded, and a trylock succeeds.
func gateIdleFailure(_ box: ThreadSafeSingleWriter<Int>) -> String? {
  let holder = sw_uptr_load(box.lock.gateThread)
  if holder != 0 { return "gateThread is \(holder)" }
  guard sw_gate_trylock(box.lock.gate) else { return "the gate is still locked" }
  sw_gate_unlock(box.lock.gate)
  return nil
}

/// Which thread holds the gate (0 for none), seen from inside a write.
func gateHolder(_ box: ThreadSafeSingleWriter<Int>) -> UInt {
  sw_uptr_load(box.lock.gateThread)
}

/// Whether the gate is wanted: the flag in the seqlock's high bit.
func gateFlag(_ box: ThreadSafeSingleWriter<Int>) -> Bool {
  sw_load_relaxed(box.lock.sequence) & SW_SEQ_GATE_WANTED != 0
}

/// In a stress test's child, once every call has returned: stops the child unless the
/// value is `value`, nothing is queued and the gate is free.
func preconditionSettled(
  _ box: ThreadSafeSingleWriter<Int>, value: Int, _ context: String = ""
) {
  precondition(box.read == value, "\(context)value \(box.read), not \(value)")
  precondition(box.pendingCount == 0, "\(context)still queued")
  if let failure = gateIdleFailure(box) { preconditionFailure(context + failure) }
}

/// Arms the gate every 50 µs until stopped, as a thread that keeps sleeping would.
func gateArmer(_ box: ThreadSafeSingleWriter<Int>) -> Repeating {
  Repeating {
    box.lock.wantGate()
    usleep(50)
  }
}

/// A child that may proceed (status 7) or stop with the self-deadlock message; it must
/// never hang, nor trip a gate assertion.
func expectProceedsOrStopsWithMessage(
  _ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation
) {
  let err = standardError(result)
  #expect(
    result?.exitStatus != .exitCode(3), "hung: \(exitReport(result))",
    sourceLocation: sourceLocation)
  #expect(
    !err.contains("gate"), "gate assertion: \(exitReport(result))", sourceLocation: sourceLocation)
  #expect(
    result?.exitStatus == .exitCode(7) || err.contains("would wait forever"),
    "\(exitReport(result))", sourceLocation: sourceLocation)
}

/// Whether this process runs under ThreadSanitizer, which stops a child process that races
/// in memory (exit status 66): a test that makes a real race on purpose, to check the
/// debug race detector, does not run then.
let underThreadSanitizer: Bool = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil
