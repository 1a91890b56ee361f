import Dispatch
import Foundation
import Observation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// The priority gate. Anything that could hang runs in a child with a watchdog (status 3,
/// "WATCHDOG"); children that may either proceed or stop with the self-deadlock message
/// exit with status 7 when they proceed. Serialized: the loads must not overlap.
@Suite(.serialized) struct ThreadSafeSingleWriterGateTests {
  // MARK: The gate (Promises.md): the flag and the span

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
    _ = box.tryWrite { value in
      #expect(sw_uptr_load(box.lock.gateThread) == sw_current_thread())
      box.lock.wantGate()  // a sleeper re-arms
      sw_store_release(box.lock.gateWanted, 0)
      box.lock.wantGate()
      value += 1
    }
    #expect(gateIdleFailure(box) == nil)
    #expect(gateFlag(box), "re-armed flag lost")
    // Re-armed from another thread in the middle of the write.
    _ = box.tryWrite { value in
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
    _ = box.tryWrite { $0 += 1 }
    #expect(gateIdleFailure(box) == nil)
    let afterCarry = sw_load_relaxed(box.lock.sequence)
    // Flag set, the counter about to wrap to zero.
    box.lock.wantGate()
    sw_store_release(box.lock.sequence, 0xFFFF_FFFE)
    _ = box.tryWrite { value in
      #expect(sw_uptr_load(box.lock.gateThread) == sw_current_thread())
      value += 1
    }
    #expect(gateIdleFailure(box) == nil)
    for _ in 0..<2_000 { _ = box.tryWrite { $0 += 1 } }
    #expect(gateIdleFailure(box) == nil)
    #expect(!gateFlag(box), "flag stuck after the span")
    #expect(box.read == 2_002)
    // Informational: a carry sets the flag with no sleeper.
    print("sequence after a carry: \(String(afterCarry, radix: 16))")
  }
}

extension ThreadSafeSingleWriterTests {
  // MARK: The gate (Promises.md): who takes it, who sleeps on it

  @Test func closureWritesTakeTheGateOnceAThreadHasSleptForTheWriter() {
    let box = ThreadSafeSingleWriter(value: 0)
    let me = sw_current_thread()
    #expect(box.withWriter { _ in gateHolder(box) } == 0, "a container nobody waits for")
    let done = DispatchSemaphore(value: 0)
    let slept = box.withWriter { _ in
      Thread.detachNewThread {
        box.withWriter { $0 += 1 }
        done.signal()
      }
      return eventually { sw_load_relaxed(box.lock.gateWanted) != 0 }
    }
    done.wait()
    #expect(slept, "the waiting thread never slept")
    #expect(box.withWriter { _ in gateHolder(box) } == me)
    #expect(box.tryWrite { _ in gateHolder(box) } == me)
    #expect(gateIdleFailure(box) == nil, "the gate outlived the write")
    #expect(box.read == 1)
  }

  @Test func aThreadSleepingForAClosureWriteSleepsOnItsGate() {
    let box = ThreadSafeSingleWriter(value: 0)
    box.lock.wantGate()
    let done = DispatchSemaphore(value: 0)
    let sleptOnGate = box.withWriter { value in
      value += 1
      Thread.detachNewThread {
        box.withWriter { $0 += 1 }
        done.signal()
      }
      return eventually { sw_load_acquire(box.lock.gateSleeps) != 0 }
    }
    done.wait()
    #expect(sleptOnGate, "the waiter slept elsewhere, where its priority boosts nobody")
    #expect(box.read == 2)
    #expect(gateIdleFailure(box) == nil)
  }

  @Test func theGateIsLeftOpenAfterAQuietSpell() {
    let box = ThreadSafeSingleWriter(value: 0)
    let me = sw_current_thread()
    box.lock.wantGate()
    var gated = 0
    for _ in 0..<HandOffPolicy.gateSpan {
      if box.tryWrite({ value in
        value += 1
        return gateHolder(box)
      }) == me {
        gated += 1
      }
    }
    #expect(gated == Int(HandOffPolicy.gateSpan))
    #expect(!gateFlag(box), "the flag outlived the span")
    #expect(gateIdleFailure(box) == nil)
    #expect(box.tryWrite { _ in gateHolder(box) } == 0, "a container nobody waits for pays")
    box.withWriter { _ in #expect(gateHolder(box) == 0) }
    #expect(box.read == Int(HandOffPolicy.gateSpan))
  }

  @Test func proxiesNeverTakeTheGate() {
    let box = ThreadSafeSingleWriter(value: 0)
    box.lock.wantGate()
    var held = box.writer
    held?.write += 1
    #expect(gateHolder(box) == 0, "a proxy may move to another thread, which could not open it")
    held = nil
    #expect(gateIdleFailure(box) == nil)
  }

  @Test func theThreadServingTheQueueHoldsTheGateUntilItHandsOver() {
    let box = ThreadSafeSingleWriter(value: 0)
    let me = sw_current_thread()
    box.lock.wantGate()
    let seen = Locked<[UInt]>([])
    var held = box.writer
    box.writeNext { proxy in
      proxy.write += 1
      seen.withLock { $0.append(sw_uptr_load(box.lock.gateThread)) }
    }
    // A body that keeps its proxy: the checkout may end on another thread, which could
    // not release this thread's gate, so it is released here first.
    let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
    box.writeNext { proxy in kept.withLock { $0 = proxy } }
    held = nil  // this thread serves both
    #expect(seen.withLock { $0 } == [me])
    #expect(gateHolder(box) == 0, "the gate stayed closed behind a kept proxy")
    let released = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      kept.withLock { $0?.write += 1 }
      kept.withLock { $0 = nil }
      released.signal()
    }
    released.wait()
    box.withWriter { $0 += 1 }
    #expect(box.read == 3)
    #expect(gateIdleFailure(box) == nil)
    _ = held
  }

  @Test func aQueuedWithWriterSleepsOnTheGateOfTheThreadServingIt() {
    // A withWriter that has waited over a millisecond queues; while the thread serving
    // the writes ahead of it holds the gate, it sleeps on the gate.
    let box = ThreadSafeSingleWriter(value: 0)
    box.lock.wantGate()
    var held = box.writer  // a proxy: nobody holds the gate yet
    let sleptOnGate = Locked(false)
    box.writeNext { proxy in
      proxy.write += 1
      let slept = eventually { sw_load_acquire(box.lock.gateSleeps) != 0 }
      sleptOnGate.withLock { $0 = slept }
    }
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      box.withWriter { $0 += 1 }
      done.signal()
    }
    let queued = eventually { box.pendingCount == 2 }
    held = nil  // this thread serves the body, holding the gate, then grants the waiter
    done.wait()
    #expect(queued, "the withWriter never queued")
    #expect(sleptOnGate.withLock { $0 }, "the queued waiter did not sleep on the gate")
    #expect(box.read == 2)
    #expect(gateIdleFailure(box) == nil)
    _ = held
  }

  @Test func withWriterInsideAGatedWriteStopsInsteadOfDeadlocking() async {
    // The gate is not reentrant: a thread that holds it must never wait on it.
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      box.lock.wantGate()
      box.withWriter { _ in box.withWriter { $0 += 1 } }
    }
  }
}

extension ThreadSafeSingleWriterGateTests {
  // MARK: The gate, No wait inside a write (Promises.md): never sleep on one's own gate

  @Test func withWriterInsideAGatedTryWriteStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "withWriter in a gated tryWrite")
      let box = ThreadSafeSingleWriter(value: 0)
      box.lock.wantGate()
      _ = box.tryWrite { v in
        precondition(sw_uptr_load(box.lock.gateThread) == sw_current_thread())
        box.withWriter { $0 += 1 }
        v += 1
      }
      exit(7)
    }
    expectStop(result, saying: "would wait forever")
  }

  @Test func withWriterInsideAGatedServersBodyStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "withWriter in a served body")
      let box = ThreadSafeSingleWriter(value: 0)
      serveQueued(box, gated: true) {
        box.writeNext { proxy in
          precondition(sw_uptr_load(box.lock.gateThread) == sw_current_thread(), "ungated")
          box.withWriter { $0 += 1 }
          proxy.write += 1
        }
      }
      exit(7)
    }
    expectStop(result, saying: "would wait forever")
  }

  /// A queued body's capture dies on the serving thread, which holds the gate.
  @Test func aDeinitRunByAGatedServerCallsWithWriter() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "deinit during a gated serve")
      let box = ThreadSafeSingleWriter(value: 0)
      serveQueued(box, gated: true) {
        let victim = CallsBack(box, adding: 1000)
        box.writeNext { [victim] proxy in
          _ = victim
          proxy.write += 1
        }
        box.writeNext { $0.write += 1 }
      }
      exit(7)
    }
    expectProceedsOrStopsWithMessage(result)
  }

  @Test func aDeinitThatDropsAKeptProxyThenCallsWithWriterWithTheGateArmed() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "kept proxy deinit, gate armed")
      let box = ThreadSafeSingleWriter(value: 0)
      serveQueued(box, gated: true) {
        let holder = HoldsProxyThenCallsBack(box)
        box.writeNext { [holder] proxy in
          proxy.write += 1
          holder.proxy = proxy
        }
        box.writeNext { $0.write += 1 }
      }
      exit(7)
    }
    expectProceedsOrStopsWithMessage(result)
  }

  /// An Observation onChange handler, run by the serving thread while it holds the gate,
  /// calls withWriter.
  @Test func anObserverCallsWithWriterWhileAGatedServerPublishes() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "observer during a gated serve")
      let box = ThreadSafeSingleWriter(value: 0)
      serveQueued(box, gated: true) {
        withObservationTracking {
          _ = box.trackedRead
        } onChange: {
          box.withWriter { $0 += 1 }
        }
        box.writeNext { $0.write += 1 }
        box.writeNext { $0.write += 1 }
      }
      precondition(gateIdleFailure(box) == nil, "gate busy")
      exit(7)
    }
    expectProceedsOrStopsWithMessage(result)
  }

  /// The same handler, reached by a gated closure write's end.
  @Test func anObserverCallsWithWriterAfterAGatedClosureWrite() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
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
}
