import Foundation
import SingleWriter
import SingleWriterAtomics

/// The live state of one generated program in the child: its containers, the writes it
/// issued, what its bodies and consumers saw, and the failures found.
final class ProgramRun: Sendable {
  let program: CheckedProgram
  let a: ThreadSafeSingleWriter<CheckedPair>
  let b: ThreadSafeSingleWriter<CheckedPair>
  /// The bounded containers whose `queuedWrites` the model says never passes the bound:
  /// only ordinary producers, none from the checkout's holder, queue there (see
  /// `ProgramModel.boundHolds`).
  let boundChecked: Set<ContainerName>
  /// Writes issued per container that must run exactly once.
  let issued = [Counter(), Counter()]
  /// Threads, tasks and helpers still running.
  let group = DispatchGroup()
  /// How long one call may run other threads' queued bodies, in the serving thread's own
  /// CPU time. The promise is about a millisecond of serving; the defects this catches
  /// served for seconds. Wall time is no measure here: on a loaded 2-core machine a
  /// serving thread is preempted for hundreds of milliseconds between two bodies (a
  /// passing run once showed 228 bodies over 210 ms), while the CPU time it spends
  /// serving is what the promise bounds and what no other process can stretch.
  let servingBound: UInt64
  private let failures = Locked([String]())
  /// Each body's start: (container, serving thread, its step, origin thread, wall time,
  /// the serving thread's CPU time).
  private let bodies = Locked(
    [
      (
        container: ContainerName, thread: UInt, step: Int, label: String, origin: UInt,
        start: UInt64, cpu: UInt64
      )
    ]())
  private let ids = Counter()

  init(_ program: CheckedProgram, chaos: Bool, boundChecked: Set<ContainerName> = []) {
    self.program = program
    func make(_ x: ContainerName) -> ThreadSafeSingleWriter<CheckedPair> {
      guard let bound = program.bounds[x] else {
        return ThreadSafeSingleWriter(value: CheckedPair())
      }
      return ThreadSafeSingleWriter(value: CheckedPair(), maxQueuedWrites: bound)
    }
    a = make(.a)
    b = make(.b)
    self.boundChecked = boundChecked
    servingBound = (chaos ? 1_000 : 200) * 1_000_000
  }

  func box(_ x: ContainerName) -> ThreadSafeSingleWriter<CheckedPair> { x == .a ? a : b }

  func count(_ x: ContainerName) { issued[x.rawValue].add(1) }

  func fail(_ message: String) { failures.withLock { $0.append(message) } }

  /// Fails if `value`, seen on x by `seer`, holds a transaction's marker: a draft's value
  /// that no commit published (see `TransactionForm`).
  func checkPublished(_ x: ContainerName, _ value: CheckedPair, _ seer: @autoclosure () -> String) {
    let limit = TransactionForm.marker / 2
    if value.a >= limit || value.b >= limit {
      fail(
        "\(seer()) of \(x) saw a value no commit published (a transaction's draft): "
          + "a = \(value.a), b = \(value.b)")
    }
  }

  /// A fresh id for a `produce` step's writes.
  func newProducer() -> Int { ids.add(1) }

  /// Reads x's `queuedWrites`: never negative, and never above the bound of a container in
  /// `boundChecked`. Returns it.
  @discardableResult
  func checkQueued(_ x: ContainerName, _ moment: @autoclosure () -> String) -> Int {
    let queued = box(x).queuedWrites
    if queued < 0 {
      fail("queuedWrites on \(x) read \(queued), negative, \(moment())")
    } else if boundChecked.contains(x), let bound = program.bounds[x], queued > bound {
      fail(
        "queuedWrites on \(x) read \(queued), above maxQueuedWrites \(bound) with only "
          + "ordinary producers queueing there, \(moment())")
    }
    return queued
  }

  /// A fresh mark for a step, set as the thread's current one.
  @discardableResult
  func enter(_ label: String = "harness", awaitWrite: Bool = false) -> StepMark {
    let mark = StepMark(id: ids.add(1), label: label, isAwaitWrite: awaitWrite)
    StepMarker.current = mark
    return mark
  }

  /// Called first by every write body: checks that this thread is not inside an
  /// `await write` that has not run its own body yet, and logs who serves whom. Only in
  /// that await's own task: another task that runs on this thread meanwhile (one resumed
  /// with the checkout to serve, after its own body ran elsewhere) is not inside it.
  func bodyBegan(_ x: ContainerName, origin: UInt, own: StepMark? = nil) {
    let current = StepMarker.current
    if let current, current.isAwaitWrite, !current.begun, current !== own,
      current.holder == sw_current_holder()
    {
      fail(
        "an await served others before suspending: a queued body (queued from thread "
          + "\(origin)) ran on thread \(StepMarker.thread) inside step \(current.id) "
          + "(\(current.label)), before that await's own body began")
    }
    let record = (
      x, StepMarker.thread, current?.id ?? 0, current?.label ?? "", origin, StepMarker.now,
      StepMarker.cpuNow
    )
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
    for x in ContainerName.allCases {
      let queued = box(x).queuedWrites
      if queued != 0 {
        fail("queuedWrites on \(x) reads \(queued) once every call has returned (want 0)")
      }
    }
    // One span per serving run: the bodies a thread ran on a container in a row, within
    // one step. Bodies of a container run one at a time, so a body run by another thread
    // in between means the checkout left this one: a step that serves more than once (a
    // task's harness step, across many calls) is not one long run.
    var spans: [String: (first: UInt64, last: UInt64, cpu: UInt64, count: Int)] = [:]
    var cpuSpans: [String: UInt64] = [:]
    var runs: [UInt: Int] = [:]
    for x in ContainerName.allCases {
      var previous: UInt?
      let ordered = bodies.withLock { $0 }.filter { $0.container == x }.sorted {
        $0.start < $1.start
      }
      for body in ordered {
        if body.thread != previous { runs[body.thread, default: 0] += 1 }
        previous = body.thread
        guard body.origin != body.thread, body.step != 0 else { continue }
        let key =
          "thread \(body.thread) in step \(body.step) (\(body.label)), serving run "
          + "\(runs[body.thread]!) on \(x)"
        // Bodies of one span run in order on one thread, so the CPU time between the
        // first and the last is what that thread spent serving them.
        let old = spans[key] ?? (body.start, body.start, body.cpu, 0)
        spans[key] = (old.first, body.start, old.cpu, old.count + 1)
        cpuSpans[key] = body.cpu &- old.cpu
      }
    }
    for (key, span) in spans where cpuSpans[key, default: 0] > servingBound {
      fail(
        "a thread served other threads' writes past the bound: \(key) ran \(span.count) "
          + "bodies queued by other threads in \(cpuSpans[key, default: 0] / 1_000_000) ms of "
          + "its CPU time, over \((span.last - span.first) / 1_000_000) ms of wall time "
          + "(bound \(servingBound / 1_000_000) ms of CPU time)")
    }
    return failures.withLock { $0 }
  }
}
