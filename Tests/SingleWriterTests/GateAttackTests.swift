import Dispatch
import Foundation
import Observation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Hostile tests for the priority gate of ThreadSafeSingleWriter. Anything that could hang
// runs in an exit test with a watchdog (status 3, "WATCHDOG"). Children that may either
// proceed or stop with the self-deadlock message exit with status 7 when they proceed.

/// `nil` if the gate is free: no holder recorded, and a trylock succeeds.
func gateIdleFailure(_ box: ThreadSafeSingleWriter<Int>) -> String? {
  let holder = sw_uptr_load(box.lock.gateThread)
  if holder != 0 { return "gateThread is \(holder)" }
  guard sw_gate_trylock(box.lock.gate) else { return "the gate is still locked" }
  sw_gate_unlock(box.lock.gate)
  return nil
}

func gateFlag(_ box: ThreadSafeSingleWriter<Int>) -> Bool {
  sw_load_relaxed(box.lock.sequence) & SW_SEQ_GATE_WANTED != 0
}

/// Arms the gate every 50 µs until `stop` is set, as a thread that keeps sleeping would.
func gateArmer(_ box: ThreadSafeSingleWriter<Int>, _ stop: SharedFlag) {
  Thread.detachNewThread {
    while !stop.isSet {
      box.lock.wantGate()
      usleep(50)
    }
  }
}

final class SharedFlag: @unchecked Sendable {
  private let lock = NSLock()
  private var value = false
  var isSet: Bool { lock.withLock { value } }
  func set() { lock.withLock { value = true } }
}

final class GateCount: @unchecked Sendable {
  private let lock = NSLock()
  private var value = 0
  func add(_ n: Int = 1) { lock.withLock { value += n } }
  var count: Int { lock.withLock { value } }
}

/// Its deinit calls `withWriter` on the box.
final class CallsWithWriterOnDeinit: @unchecked Sendable {
  let box: ThreadSafeSingleWriter<Int>
  init(_ box: ThreadSafeSingleWriter<Int>) { self.box = box }
  deinit { box.withWriter { $0 += 1000 } }
}

/// Keeps a proxy; its deinit drops it on this thread and then calls withWriter.
final class KeepsProxyThenWithWriter: @unchecked Sendable {
  let box: ThreadSafeSingleWriter<Int>
  var proxy: ThreadSafeWriterProxy<Int>?
  init(_ box: ThreadSafeSingleWriter<Int>) { self.box = box }
  deinit {
    proxy = nil
    box.withWriter { $0 += 100 }
  }
}

/// Drops the kept proxy it holds, on whatever thread releases this.
final class DropsProxyOnDeinit: @unchecked Sendable {
  var proxy: ThreadSafeWriterProxy<Int>?
  deinit {
    proxy?.write += 1
    proxy = nil
  }
}

func gateStderr(_ result: ExitTest.Result?) -> String {
  result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
}

/// A child that may proceed (status 7) or stop with the self-deadlock message; it must
/// never hang, nor trip a gate assertion.
func expectProceedsOrStopsWithMessage(_ result: ExitTest.Result?) {
  let err = gateStderr(result)
  #expect(result?.exitStatus != .exitCode(3), "hung: \(exitReport(result))")
  #expect(!err.contains("gate"), "gate assertion: \(exitReport(result))")
  #expect(
    result?.exitStatus == .exitCode(7) || err.contains("would wait forever"),
    "\(exitReport(result))")
}

@Suite(.serialized) struct GateAttackTests {
  // MARK: Promise 6: the flag and the span

  @Test func theSpanEndsAfter1024GatedWrites() {
    let box = ThreadSafeSingleWriter(value: 0)
    box.lock.wantGate()
    var gated = 0
    for _ in 0..<1_100 {
      box.tryWrite { value in
        if sw_uptr_load(box.lock.gateThread) == sw_current_thread() { gated += 1 }
        value += 1
      }
    }
    #expect(gated == 1_024, "gated \(gated)")
    #expect(!gateFlag(box), "the flag outlived the span")
    #expect(gateIdleFailure(box) == nil)
    // withWriter and await-less paths after the span: no gate.
    box.withWriter { _ in #expect(sw_uptr_load(box.lock.gateThread) == 0) }
    #expect(box.read == 1_100)
  }

  @Test func aGatedWriteReleasesWhenTheSpanRunsOutOrIsRearmedMidWrite() {
    let box = ThreadSafeSingleWriter(value: 0)
    box.lock.wantGate()
    box.withWriter { value in
      #expect(sw_uptr_load(box.lock.gateThread) == sw_current_thread())
      sw_store_release(box.lock.gateWanted, 0)  // the span runs out meanwhile
      value += 1
    }
    #expect(gateIdleFailure(box) == nil)
    #expect(!gateFlag(box), "flag left set with an empty span")
    box.lock.wantGate()
    box.tryWrite { value in
      #expect(sw_uptr_load(box.lock.gateThread) == sw_current_thread())
      box.lock.wantGate()  // a sleeper re-arms
      sw_store_release(box.lock.gateWanted, 0)
      box.lock.wantGate()
      value += 1
    }
    #expect(gateIdleFailure(box) == nil)
    #expect(gateFlag(box), "re-armed flag lost")
    // Re-armed from another thread in the middle of the write.
    box.tryWrite { value in
      let done = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        box.lock.wantGate()
        done.signal()
      }
      done.wait()
      value += 1
    }
    #expect(gateIdleFailure(box) == nil)
    #expect(box.read == 3)
  }

  /// The flag rides in the seqlock's high bit: the low 31 bits wrap after 2^30 writes.
  /// A carry out of them must not strand the gate.
  @Test func theSequenceWrapsAroundTheFlag() {
    let box = ThreadSafeSingleWriter(value: 0)
    // Flag clear, the counter about to carry into it.
    sw_store_release(box.lock.sequence, 0x7FFF_FFFE)
    box.tryWrite { $0 += 1 }
    #expect(gateIdleFailure(box) == nil)
    let afterCarry = sw_load_relaxed(box.lock.sequence)
    // Flag set, the counter about to wrap to zero.
    box.lock.wantGate()
    sw_store_release(box.lock.sequence, 0xFFFF_FFFE)
    box.tryWrite { value in
      #expect(sw_uptr_load(box.lock.gateThread) == sw_current_thread())
      value += 1
    }
    #expect(gateIdleFailure(box) == nil)
    for _ in 0..<2_000 { box.tryWrite { $0 += 1 } }
    #expect(gateIdleFailure(box) == nil)
    #expect(!gateFlag(box), "flag stuck after the span")
    #expect(box.read == 2_002)
    // Informational: a carry sets the flag with no sleeper.
    print("sequence after a carry: \(String(afterCarry, radix: 16))")
  }

  // MARK: Promise 2: never sleep on a gate this thread holds

  @Test func withWriterInsideAGatedTryWriteStopsWithAMessage() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter in a gated tryWrite")
      let box = ThreadSafeSingleWriter(value: 0)
      box.lock.wantGate()
      box.tryWrite { v in
        precondition(sw_uptr_load(box.lock.gateThread) == sw_current_thread())
        box.withWriter { $0 += 1 }
        v += 1
      }
      exit(7)
    }
    #expect(result?.exitStatus != .exitCode(3), "hung: \(exitReport(result))")
    #expect(gateStderr(result).contains("would wait forever"), "\(exitReport(result))")
  }

  @Test func withWriterInsideAGatedServersBodyStopsWithAMessage() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter in a served body")
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      box.lock.wantGate()
      box.writeNext { proxy in
        precondition(sw_uptr_load(box.lock.gateThread) == sw_current_thread(), "ungated")
        box.withWriter { $0 += 1 }
        proxy.write += 1
      }
      held = nil
      _ = held
      exit(7)
    }
    #expect(result?.exitStatus != .exitCode(3), "hung: \(exitReport(result))")
    #expect(gateStderr(result).contains("would wait forever"), "\(exitReport(result))")
  }

  /// A queued body's capture dies on the serving thread, which holds the gate.
  @Test func aDeinitRunByAGatedServerCallsWithWriter() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "deinit during a gated serve")
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      box.lock.wantGate()
      do {
        let victim = CallsWithWriterOnDeinit(box)
        box.writeNext { [victim] proxy in
          _ = victim
          proxy.write += 1
        }
      }
      box.writeNext { $0.write += 1 }
      held = nil
      _ = held
      exit(7)
    }
    expectProceedsOrStopsWithMessage(result)
  }

  @Test func aDeinitThatDropsAKeptProxyThenCallsWithWriterWithTheGateArmed() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "kept proxy deinit, gate armed")
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      box.lock.wantGate()
      do {
        let holder = KeepsProxyThenWithWriter(box)
        box.writeNext { [holder] proxy in
          proxy.write += 1
          holder.proxy = proxy
        }
      }
      box.writeNext { $0.write += 1 }
      held = nil
      _ = held
      exit(7)
    }
    expectProceedsOrStopsWithMessage(result)
  }

  /// An Observation onChange handler, run by the serving thread while it holds the gate,
  /// calls withWriter.
  @Test func anObserverCallsWithWriterWhileAGatedServerPublishes() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "observer during a gated serve")
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      box.lock.wantGate()
      withObservationTracking {
        _ = box.trackedRead
      } onChange: {
        box.withWriter { $0 += 1 }
      }
      box.writeNext { $0.write += 1 }
      box.writeNext { $0.write += 1 }
      held = nil
      _ = held
      precondition(gateIdleFailure(box) == nil, "gate busy")
      exit(7)
    }
    expectProceedsOrStopsWithMessage(result)
  }

  /// The same handler, reached by a gated closure write's end.
  @Test func anObserverCallsWithWriterAfterAGatedClosureWrite() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "observer after a gated write")
      let box = ThreadSafeSingleWriter(value: 0)
      box.lock.wantGate()
      withObservationTracking {
        _ = box.trackedRead
      } onChange: {
        box.withWriter { $0 += 1 }
      }
      box.withWriter { $0 += 1 }
      precondition(box.read == 2, "value \(box.read)")
      precondition(gateIdleFailure(box) == nil, "gate busy")
      exit(7)
    }
    expectProceedsOrStopsWithMessage(result)
  }

  // MARK: Promises 1, 3, 4, 5 under load

  /// Queued bodies keep their proxy and hand it to another thread that drops it at once
  /// (racing the server's `proxyKept`), or to an object whose deinit drops it; withWriter
  /// threads sleep on the gate meanwhile; the gate is re-armed all along.
  @Test func keptProxiesDroppedOnOtherThreadsWhileGatedServersRun() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(40, "kept proxies under the gate")
      let box = ThreadSafeSingleWriter(value: 0)
      let stop = SharedFlag()
      gateArmer(box, stop)
      let dropper = DispatchQueue(label: "dropper")
      let perThread = 600
      let group = DispatchGroup()
      let expected = GateCount()
      for t in 0..<3 {
        group.enter()
        Thread.detachNewThread {
          for i in 0..<perThread {
            switch (i + t) % 5 {
            case 0:
              expected.add(2)
              box.writeNext { proxy in
                proxy.write += 1
                let moved = proxy
                dropper.async {
                  moved.write += 1
                  _ = moved
                }
              }
            case 1:
              expected.add(2)
              box.writeNext { proxy in
                proxy.write += 1
                let holder = DropsProxyOnDeinit()
                holder.proxy = proxy
                dropper.async { _ = holder }
              }
            case 2:
              expected.add(1)
              box.withWriter { $0 += 1 }
            case 3:
              if box.tryWrite({ $0 += 1 }) != nil { expected.add(1) }
            default:
              expected.add(1)
              box.writeNext { proxy in
                attackSpin(30_000)
                proxy.write += 1
              }
            }
          }
          group.leave()
        }
      }
      group.wait()
      dropper.sync {}
      // The last drops may still be serving on the dropper: wait for the writer.
      box.withWriter { _ in }
      stop.set()
      usleep(1_000)
      box.withWriter { _ in }
      precondition(box.read == expected.count, "value \(box.read), not \(expected.count)")
      precondition(box.pendingCount == 0, "still queued")
      if let failure = gateIdleFailure(box) { preconditionFailure(failure) }
      exit(7)
    }
    #expect(result?.exitStatus == .exitCode(7), "\(exitReport(result))")
  }

  /// A server that runs long bodies is taken over by successors (writeNext from other
  /// threads after a millisecond) while withWriter waiters queue and poll the gate.
  @Test func successorsTakeOverAGatedServerWhileWaitersPoll() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(40, "successors under the gate")
      let box = ThreadSafeSingleWriter(value: 0)
      let stop = SharedFlag()
      gateArmer(box, stop)
      let group = DispatchGroup()
      let perThread = 400
      for t in 0..<4 {
        group.enter()
        Thread.detachNewThread {
          for i in 0..<perThread {
            if t == 3 && i % 4 == 0 {
              box.withWriter { $0 += 1 }
            } else {
              box.writeNext { proxy in
                attackSpin(t == 0 ? 200_000 : 5_000)
                proxy.write += 1
              }
            }
          }
          group.leave()
        }
      }
      group.wait()
      stop.set()
      precondition(box.read == 4 * perThread, "value \(box.read), not \(4 * perThread)")
      precondition(box.pendingCount == 0, "still queued")
      if let failure = gateIdleFailure(box) { preconditionFailure(failure) }
      exit(7)
    }
    #expect(result?.exitStatus == .exitCode(7), "\(exitReport(result))")
  }

  /// Tasks on the cooperative pool call withWriter (blocking), await write,
  /// writeUnlessCancelled, checkout() and tryWrite, while threads queue writeNext and
  /// observers consume changes(); the gate is re-armed all along.
  @Test func theCooperativePoolMixesEverythingWithTheGateArmed() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(40, "cooperative pool under the gate")
      let box = ThreadSafeSingleWriter(value: 0)
      let stop = SharedFlag()
      gateArmer(box, stop)
      let expected = GateCount()
      let observer = Task {
        var seen = 0
        for await _ in box.changes() {
          seen += 1
          if seen > 50 { break }
        }
      }
      let semaphore = DispatchSemaphore(value: 0)
      Task {
        await withTaskGroup(of: Void.self) { group in
          for t in 0..<12 {
            group.addTask {
              for i in 0..<150 {
                switch (i + t) % 6 {
                case 0:
                  box.withWriter { $0 += 1 }
                  expected.add(1)
                case 1:
                  await box.write { $0 += 1 }
                  expected.add(1)
                case 2:
                  if (try? await box.writeUnlessCancelled({ $0 += 1 })) != nil { expected.add(1) }
                case 3:
                  if let proxy = try? await box.checkout() {
                    proxy.write += 1
                    expected.add(1)
                  }
                case 4:
                  if box.tryWrite({ $0 += 1 }) != nil { expected.add(1) }
                default:
                  box.writeNext { $0.write += 1 }
                  expected.add(1)
                }
              }
            }
          }
        }
        semaphore.signal()
      }
      let threads = DispatchGroup()
      for _ in 0..<2 {
        threads.enter()
        Thread.detachNewThread {
          for i in 0..<500 {
            if i % 3 == 0 {
              box.withWriter { $0 += 1 }
            } else {
              box.writeNext { $0.write += 1 }
            }
            expected.add(1)
          }
          threads.leave()
        }
      }
      semaphore.wait()
      threads.wait()
      stop.set()
      observer.cancel()
      precondition(box.read == expected.count, "value \(box.read), not \(expected.count)")
      precondition(box.pendingCount == 0, "still queued")
      if let failure = gateIdleFailure(box) { preconditionFailure(failure) }
      exit(7)
    }
    #expect(result?.exitStatus == .exitCode(7), "\(exitReport(result))")
  }

  /// Queued `await writeUnlessCancelled` and `checkout()` are cancelled around their turn
  /// while a gated server runs the queue and a queued withWriter polls the gate.
  @Test func cancellationAtTheTurnWithAGatedServer() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(40, "cancellation under the gate")
      let box = ThreadSafeSingleWriter(value: 0)
      let ran = GateCount()
      for round in 0..<60 {
        box.lock.wantGate()
        var held = box.writer
        var tasks: [Task<Void, Never>] = []
        for i in 0..<8 {
          tasks.append(
            Task {
              if i % 2 == 0 {
                if (try? await box.writeUnlessCancelled({ $0 += 1 })) != nil { ran.add(1) }
              } else if let proxy = try? await box.checkout() {
                proxy.write += 1
                ran.add(1)
              }
            })
        }
        box.writeNext { proxy in
          attackSpin(UInt64(round % 4) * 300_000)
          proxy.write += 1
        }
        let waiter = DispatchGroup()
        waiter.enter()
        Thread.detachNewThread {
          box.withWriter { $0 += 1 }
          waiter.leave()
        }
        usleep(UInt32(round % 3) * 700)
        for (i, task) in tasks.enumerated() where i % 3 != 0 { task.cancel() }
        held = nil
        _ = held
        for task in tasks {
          let done = DispatchSemaphore(value: 0)
          Task {
            await task.value
            done.signal()
          }
          done.wait()
        }
        waiter.wait()
        precondition(box.read == ran.count + 2 * (round + 1), "round \(round): \(box.read)")
        precondition(box.pendingCount == 0, "still queued")
        if let failure = gateIdleFailure(box) { preconditionFailure("round \(round): \(failure)") }
      }
      exit(7)
    }
    #expect(result?.exitStatus == .exitCode(7), "\(exitReport(result))")
  }

  /// Everything idle after a gated mix: the container is freed.
  @Test func theContainerIsFreedAfterAGatedMix() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "freeing after the gate")
      weak var weakBox: ThreadSafeSingleWriter<Int>?
      do {
        let box = ThreadSafeSingleWriter(value: 0)
        weakBox = box
        box.lock.wantGate()
        let group = DispatchGroup()
        for t in 0..<3 {
          group.enter()
          Thread.detachNewThread {
            for i in 0..<300 {
              if (i + t) % 2 == 0 {
                box.withWriter { $0 += 1 }
              } else {
                box.writeNext { proxy in
                  let kept = proxy
                  DispatchQueue.global().async { kept.write += 1 }
                }
              }
            }
            group.leave()
          }
        }
        group.wait()
        while box.read != 900 { usleep(100) }
        box.withWriter { _ in }
        if let failure = gateIdleFailure(box) { preconditionFailure(failure) }
      }
      var spins = 0
      while weakBox != nil && spins < 2_000 {
        usleep(1_000)
        spins += 1
      }
      precondition(weakBox == nil, "the container leaked")
      exit(7)
    }
    #expect(result?.exitStatus == .exitCode(7), "\(exitReport(result))")
  }
}

// Under the deterministic scheduler only (the suite is disabled otherwise).
extension ScheduleScenarioTests {
  /// A queued body keeps its proxy and a third thread drops it at once, racing the
  /// gated server's end of the lend, while a withWriter waits and a later body is queued.
  @Test func aKeptProxyDroppedElsewhereRacesAGatedServer() {
    Scheduler.check(pct: 500, exhaustive: 2_000, tick: 10_000, allowsTimeouts: true) {
      let container = Self.makeContainer()
      sw_store_release(container.lock.spinRounds, 0)
      container.lock.wantGate()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let kept = ScheduleBox<ThreadSafeWriterProxy<Int>>()
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            container.writeNext { proxy in kept.strong = proxy }
            Self.queue(container, journal, "A.1")
            journal.leave()
            held.strong = nil
          },
          {
            container.withWriter {
              journal.enter("B.1")
              $0 += 1
              journal.leave()
            }
          },
          {
            while kept.strong == nil { sw_yield_thread() }
            kept.strong = nil
          },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "A.1", "B.1"]) })
    }
  }
}
