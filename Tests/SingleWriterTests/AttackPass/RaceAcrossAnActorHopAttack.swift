import Foundation
import Testing

@testable import SingleWriter

// Promise "Races reported" (and SingleWriter's doc comment: "Debug builds check this: using
// one container from two threads at once is reported through RaceDetector"): a task that
// took the writer on actor A, then runs a nonisolated async function (off the actor, on the
// global executor) that writes through the proxy, while another task of actor A writes
// through the same proxy (kept in the actor's state), uses the container from two threads
// at once. The checkout section records actor A's executor and the holder task, and each
// of the two writers matches one of them: each access through the proxy now opens a
// section of its own, which the other writer does not match.

/// Write accesses that store nothing in the value; the proxy's own bookkeeping still races
/// in memory, so the test does not run under ThreadSanitizer.
struct AtkHopLedger {
  let hits = Counter()
  /// A write access that lasts 20 µs, so that the two writers' accesses overlap often.
  mutating func slowBump() {
    hits.add(1)
    attackSpin(20_000)
  }
}

actor AtkHopHolder {
  var proxy: WriterProxy<AtkHopLedger>?
  let box: AtkSmuggled<SingleWriter<AtkHopLedger>>
  init(_ box: AtkSmuggled<SingleWriter<AtkHopLedger>>) { self.box = box }

  /// Takes the writer on the actor, keeps it in `proxy`, then leaves the actor (a
  /// nonisolated async call) and writes through it there until the actor's other task has
  /// written meanwhile. Returns the off-actor thread and whether the writes overlapped.
  func holdAndWriteOffActor(_ progress: Counter) async -> (UInt, Bool) {
    let held = box.value.writer!
    proxy = held
    let result = await atkHopWriteOffActor(AtkSmuggled(held), progress)
    proxy = nil
    return result
  }

  /// Another task's turn on the actor: a write through the proxy the actor keeps.
  func writeThroughKept(_ progress: Counter) -> UInt? {
    guard let proxy else { return nil }
    proxy.write.slowBump()
    progress.add(1)
    return atkThreadID()
  }

  var isHolding: Bool { proxy != nil }
}

/// Runs on the global executor (nonisolated async, no `nonisolated(nonsending)`).
nonisolated func atkHopWriteOffActor(
  _ held: AtkSmuggled<WriterProxy<AtkHopLedger>>, _ progress: Counter
) async -> (UInt, Bool) {
  let start = progress.load()
  let deadline = attackNow() + 3_000_000_000
  var overlapped = false
  while attackNow() < deadline {
    held.value.write.slowBump()  // a write access on this thread...
    if progress.load() >= start + 20 {  // ...while the actor's task wrote 20 times meanwhile
      overlapped = true
      break
    }
  }
  return (atkThreadID(), overlapped)
}

@Suite struct AttackPassRaceAcrossAnActorHop {
  #if DEBUG
    @Test(
      .enabled(if: !underThreadSanitizer, "races in memory on purpose (the proxy's plain fields)"))
    func aHolderTaskWritingOffItsActorWhileTheActorWritesIsReported() async {
      let result = await #expect(
        processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
      ) {
        attackWatchdog(20, "off-actor race")
        let reports = Counter()
        RaceDetector.onRace = { report in
          if report.resource.contains("AtkHopLedger") { reports.add(1) }
        }
        let box = AtkSmuggled(SingleWriter(value: AtkHopLedger()))
        let holder = AtkHopHolder(box)
        let progress = Counter()
        let hold = Task.detached { await holder.holdAndWriteOffActor(progress) }
        while !(await holder.isHolding) { await Task.yield() }
        // Other tasks of the actor write through the kept proxy while the holder task runs
        // off the actor.
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
          "a SingleWriter written from two threads at once (a holder task off its actor and "
            + "another task of that actor) was not reported")
      }
      atkDiag(result)
      #expect(!standardError(result).contains("BREAK"), "\(exitReport(result))")
    }
  #endif
}
