import Foundation
import SingleWriter

/// The live state of one generated program in the child: its containers, the writes it
/// issued, what its bodies and consumers saw, and the failures found.
final class ProgramRun: Sendable {
  let program: CheckedProgram
  let a = ThreadSafeSingleWriter(value: CheckedPair())
  let b = ThreadSafeSingleWriter(value: CheckedPair())
  /// Writes issued per container that must run exactly once.
  let issued = [Counter(), Counter()]
  /// Threads, tasks and helpers still running.
  let group = DispatchGroup()
  /// How long one call may run other threads' queued bodies, in wall time. The promise is
  /// about a millisecond of serving; the defects this catches served for seconds. A
  /// thread serving on a loaded 2-core machine is preempted for tens of milliseconds, and
  /// that counts here, so the bound leaves room for it.
  let servingBound: UInt64
  private let failures = Locked([String]())
  /// Each body's start: (serving thread, its step, origin thread, time).
  private let bodies = Locked(
    [(thread: UInt, step: Int, label: String, origin: UInt, start: UInt64)]())
  private let ids = Counter()

  init(_ program: CheckedProgram, chaos: Bool) {
    self.program = program
    servingBound = (chaos ? 1_000 : 200) * 1_000_000
  }

  func box(_ x: ContainerName) -> ThreadSafeSingleWriter<CheckedPair> { x == .a ? a : b }

  func count(_ x: ContainerName) { issued[x.rawValue].add(1) }

  func fail(_ message: String) { failures.withLock { $0.append(message) } }

  /// A fresh mark for a step, set as the thread's current one.
  @discardableResult
  func enter(_ label: String = "harness", awaitWrite: Bool = false) -> StepMark {
    let mark = StepMark(id: ids.add(1), label: label, isAwaitWrite: awaitWrite)
    StepMarker.current = mark
    return mark
  }

  /// Called first by every write body: checks that this thread is not inside an
  /// `await write` that has not run its own body yet, and logs who serves whom.
  func bodyBegan(origin: UInt, own: StepMark? = nil) {
    let current = StepMarker.current
    if let current, current.isAwaitWrite, !current.begun, current !== own {
      fail(
        "an await served others before suspending: a queued body (queued from thread "
          + "\(origin)) ran on thread \(StepMarker.thread) inside step \(current.id) "
          + "(\(current.label)), before that await's own body began")
    }
    let record = (StepMarker.thread, current?.id ?? 0, current?.label ?? "", origin, StepMarker.now)
    bodies.withLock { $0.append(record) }
  }

  /// The checks made once every root, helper and consumer has finished.
  func finalFailures() -> [String] {
    for x in ContainerName.allCases {
      let value = box(x).read
      let expected = issued[x.rawValue].load()
      if value.a != expected || value.b != expected {
        fail(
          "lost or doubled writes on \(x): \(expected) writes issued, final value "
            + "a = \(value.a), b = \(value.b)")
      }
    }
    var spans: [String: (first: UInt64, last: UInt64, count: Int)] = [:]
    for body in bodies.withLock({ $0 }) where body.origin != body.thread && body.step != 0 {
      let key = "thread \(body.thread) in step \(body.step) (\(body.label))"
      let old = spans[key] ?? (body.start, body.start, 0)
      spans[key] = (min(old.first, body.start), max(old.last, body.start), old.count + 1)
    }
    for (key, span) in spans where span.last - span.first > servingBound {
      fail(
        "a thread served other threads' writes past the bound: \(key) ran \(span.count) "
          + "bodies queued by other threads over \((span.last - span.first) / 1_000_000) ms "
          + "(bound \(servingBound / 1_000_000) ms)")
    }
    return failures.withLock { $0 }
  }
}
