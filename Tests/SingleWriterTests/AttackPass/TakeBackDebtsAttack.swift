import Foundation
import Testing

@testable import SingleWriter

// "A release pays its debts" after checkouts whose offers were taken back. Every take-back
// puts the task's `checkout()` entry back at the front of the batch, so the servers pop it
// twice; `ran` (what `midBatch` compares with the debt) must count it once, as `taken`
// (what the debt is counted in) did, or it runs one ahead for good.

/// Makes `rounds` take-backs on `a`: a `checkout()` whose task cannot run is offered the
/// writer, and a thread blocked in `withWriter` behind it takes the offer back.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
func atkTakeBacks(_ a: ThreadSafeSingleWriter<Int>, rounds: Int) {
  for round in 0..<rounds {
    var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
    let executor = ScheduleExecutor()
    let finished = SharedFlag()
    Task(executorPreference: executor) {
      if let proxy = try? await a.checkout() { proxy.write += 1 }
      finished.set()
    }
    coaRun(executor) { a.pendingCount == 1 }  // queued, then not run
    let blockedDone = SharedFlag()
    Thread.detachNewThread {
      a.withWriter { $0 += 1 }
      blockedDone.set()
    }
    coaAwait(60, "round \(round): the withWriter never queued") { a.queuedWrites == 2 }
    held = nil  // offered to the task, which cannot run
    _ = held
    coaAwait(60, "round \(round): the withWriter never took the offer back") { blockedDone.isSet }
    coaRun(executor) { finished.isSet }
    coaAwait(60, "round \(round): the writer never came free") { a.queuedWrites == 0 }
  }
}

/// This thread holds `a`'s writer; another thread queues 100 slow writes behind it; this
/// thread queues 3 writes of its own (its debt) and releases, while a third thread keeps
/// queueing (so a successor is chosen once the release has served past its millisecond).
/// Returns how many of this thread's 3 writes had run when its release returned.
func atkOwnWritesRunByTheRelease(_ a: ThreadSafeSingleWriter<Int>) -> Int {
  var held = a.writer
  precondition(held != nil, "the writer was not free")
  let queued = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    for _ in 0..<100 { a.writeNext { _ in attackSpin(50_000) } }
    queued.signal()
  }
  queued.wait()
  let own = Counter()
  for _ in 0..<3 {
    a.writeNext { proxy in
      proxy.write += 1
      own.add(1)
    }
  }
  let stream = Repeating {
    a.writeNext { _ in }
    attackSpin(20_000)
  }
  held = nil  // this thread owes its 3 writes: they must have run when this returns
  _ = held
  let ranAtReturn = own.load()
  stream.stop()
  a.withWriter { _ in }
  return ranAtReturn
}

@Suite(.serialized) struct AttackPassTakeBackDebts {
  /// 60 take-backs, then a release that owes 3 writes, queued behind 100 slow writes of
  /// another thread, while a third thread streams writes: the release must return only
  /// after its 3 writes ran ("A release pays its debts").
  @Test func aReleaseAfterTakeBacksStillPaysItsDebts() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(60, "a release after take-backs")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      let a = ThreadSafeSingleWriter(value: 0)
      coaOnThread { atkTakeBacks(a, rounds: 60) }
      let skew = a.ran &- a.lock.withHandOffLock { a.handOff.pointee.taken }
      attackErr("after 60 take-backs: ran - taken = \(Int64(bitPattern: skew))\n")
      var short = 0
      var worst = 3
      for _ in 0..<5 {
        let ran = Locked(0)
        coaOnThread { ran.withLock { $0 = atkOwnWritesRunByTheRelease(a) } }
        let got = ran.withLock { $0 }
        if got != 3 { short += 1 }
        worst = min(worst, got)
      }
      atkEnd(
        breakingIf: short > 0,
        "\(short) of 5 releases returned before the writes their thread queued while holding "
          + "the checkout ran (fewest run: \(worst) of 3)")
    }
    expectNoBreak(result)
  }

  /// The control: the same releases with no take-back before them pay their debts.
  @Test func aReleaseWithoutTakeBacksPaysItsDebts() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(60, "a release without take-backs")
      let a = ThreadSafeSingleWriter(value: 0)
      var short = 0
      for _ in 0..<5 {
        let ran = Locked(0)
        coaOnThread { ran.withLock { $0 = atkOwnWritesRunByTheRelease(a) } }
        if ran.withLock({ $0 }) != 3 { short += 1 }
      }
      atkEnd(breakingIf: short > 0, "\(short) of 5 releases returned before their own writes ran")
    }
    expectNoBreak(result)
  }
}
