import Foundation
import Testing

@testable import SingleWriter

// Promise "Races reported" ("Debug builds report a SingleWriter used from two threads at
// once, and not one used by one actor's methods taking turns"): a task of actor A begins a
// write access through a kept proxy ON the actor, as the receiver of a `@concurrent` async
// mutating method. The method runs off the actor, on the global executor, holding its
// `self` (the container's storage) there, while other tasks of actor A write through the
// same proxy. Two threads hold write accesses to one value at once; nobody takes turns. The holder's
// access section was opened on the actor, and was taken for "the same actor" by every
// access of A's other tasks; an access's section is now its task's alone.

/// Write accesses that store nothing in the value; the proxy's own bookkeeping still races
/// in memory, so the test does not run under ThreadSanitizer.
struct AtkOffLedger: Sendable {
  let hits = Counter()
  /// Runs off any actor, holding the inout access to the container's value all along,
  /// until the actor's other tasks wrote 20 times meanwhile (or 3 s).
  @concurrent mutating func bumpOffActor(_ progress: Counter) async -> (UInt, Bool) {
    let start = progress.load()
    let deadline = attackNow() + 3_000_000_000
    while attackNow() < deadline {
      hits.add(1)
      attackSpin(20_000)
      if progress.load() >= start + 20 { return (atkThreadID(), true) }
    }
    return (atkThreadID(), false)
  }

  mutating func slowBump() {
    hits.add(1)
    attackSpin(20_000)
  }
}

actor AtkOffHolder {
  var proxy: WriterProxy<AtkOffLedger>?
  let box: AtkSmuggled<SingleWriter<AtkOffLedger>>
  init(_ box: AtkSmuggled<SingleWriter<AtkOffLedger>>) { self.box = box }

  /// Takes the writer on the actor, keeps it, and begins one write access through it here,
  /// which a `@concurrent` method continues off the actor.
  func holdAndMutateOffActor(_ progress: Counter) async -> (UInt, Bool) {
    let held = box.value.writer!
    proxy = held
    let result = await held.write.bumpOffActor(progress)
    proxy = nil
    return result
  }

  func writeThroughKept(_ progress: Counter) -> UInt? {
    guard let proxy else { return nil }
    proxy.write.slowBump()
    progress.add(1)
    return atkThreadID()
  }

  var isHolding: Bool { proxy != nil }
}

@Suite struct AttackPassAccessContinuedOffTheActor {
  #if DEBUG
    @Test(
      .enabled(if: !underThreadSanitizer, "races in memory on purpose (the proxy's plain fields)"))
    func anAccessBegunOnTheActorAndContinuedOffItWhileTheActorWritesIsReported() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(20, "access continued off the actor")
        let reports = Counter()
        RaceDetector.onRace = { report in
          if report.resource.contains("AtkOffLedger") { reports.add(1) }
        }
        let box = AtkSmuggled(SingleWriter(value: AtkOffLedger()))
        let holder = AtkOffHolder(box)
        let progress = Counter()
        let hold = Task.detached { await holder.holdAndMutateOffActor(progress) }
        while !(await holder.isHolding) { await Task.yield() }
        let actorThreads = Locked<Set<UInt>>([])
        let writers = Task.detached {
          for _ in 0..<100_000 {
            guard let thread = await holder.writeThroughKept(progress) else { break }
            actorThreads.withLock { _ = $0.insert(thread) }
          }
        }
        let (offActorThread, overlapped) = await hold.value
        await writers.value
        let threads = actorThreads.withLock { $0 }
        let crossThread = !threads.subtracting([offActorThread]).isEmpty
        attackErr(
          "overlapped: \(overlapped), off-actor thread \(offActorThread), actor threads "
            + "\(threads), reports: \(reports.load())\n")
        guard overlapped, crossThread else {
          attackErr("inconclusive: no overlap across threads\n")
          exit(0)
        }
        atkEnd(
          breakingIf: reports.load() == 0,
          "a SingleWriter's value written on two threads at once (an access begun on actor "
            + "A, continued off it by a @concurrent mutating method, and A's other tasks "
            + "writing through the same proxy) was not reported")
      }
      atkDiag(result)
      #expect(!standardError(result).contains("BREAK"), "\(exitReport(result))")
    }
  #endif
}
