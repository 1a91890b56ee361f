import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

extension ThreadSafeSingleWriterTests {
  // MARK: Stale proxies stop, One writer (Promises.md): proxies that outlive their closure

  @Test func anIdleProxyReachedThroughUnmanagedStopsWithTheStaleMessage() async {
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      let escaped = Locked<Unmanaged<ThreadSafeWriterProxy<Int>>?>(nil)
      box.writeNext { proxy in escaped.withLock { $0 = Unmanaged.passUnretained(proxy) } }
      escaped.withLock { $0 }!.takeUnretainedValue().write = 1
    }
  }

  @Test func aWeakReferenceToALentProxyNeverReachesALaterCheckout() {
    let box = ThreadSafeSingleWriter(value: 0)
    let escaped = WeakProxy<Int>()
    box.writeNext { escaped.proxy = $0 }
    #expect(escaped.proxy == nil, "the retired proxy was freed")
    let held = box.writer!
    #expect(escaped.proxy == nil)
    let lent = Locked<ObjectIdentifier?>(nil)
    let nested = WeakProxy<Int>()
    box.writeNext { proxy in lent.withLock { $0 = ObjectIdentifier(proxy) } }
    box.writeNext { nested.proxy = $0 }
    _ = held
    #expect(box.read == 0)
  }

  @Test func aProxyKeptWeaklyByOneQueuedWriteIsNotTheNextOnesProxy() {
    let box = ThreadSafeSingleWriter(value: [Int]())
    let escaped = WeakProxy<[Int]>()
    let seen = Locked<[Bool]>([])
    var held = box.writer
    box.writeNext { escaped.proxy = $0 }
    box.writeNext { proxy in
      seen.withLock { $0.append(escaped.proxy === proxy) }
      proxy.write.append(1)
    }
    held = nil
    _ = held
    #expect(seen.withLock { $0 } == [false])
    #expect(box.read == [1])
  }

  @Test func aStrongReferenceTakenOnAnotherThreadOwnsTheCheckout() {
    let box = ThreadSafeSingleWriter(value: 0)
    let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
    box.writeNext { proxy in kept.withLock { $0 = proxy } }
    #expect(box.writer == nil, "the kept proxy holds the checkout")
    box.writeNext { $0.write += 1 }
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      kept.withLock { $0?.write = 10 }
      kept.withLock { $0 = nil }
      done.signal()
    }
    done.wait()
    box.withWriter { _ in }
    #expect(box.read == 11)
  }

  /// A thread keeps upgrading a weak reference to lent proxies while the lender decides
  /// whether they were kept; before the fix, its writes landed inside the next checkout,
  /// or in a freed container. Now they stop the program with the stale-proxy message,
  /// or land in the proxy's own checkout, and never in another's. Rounds for 3 s.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func aWeakReferenceTurnedStrongOnAnotherThreadNeverWritesIntoALaterCheckout() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let escaped = WeakProxy<Int>()
      _ = Repeating {
        if let proxy = escaped.proxy { proxy.write &+= 1_000_000 }
      }
      let end = attackNow() + 3_000_000_000
      while attackNow() < end {
        let box = ThreadSafeSingleWriter(value: 0)  // freed at the end of each round
        var held = box.writer
        box.writeNext { escaped.proxy = $0 }
        let mine = Locked<ThreadSafeWriterProxy<Int>?>(nil)
        box.writeNext { proxy in mine.withLock { $0 = proxy } }
        held = nil
        _ = held
        if let proxy = mine.withLock({ $0 }) {
          let before = proxy.write
          for _ in 0..<2_000 where box.read != before {
            attackErr("LANDED inside another checkout\n")
            exit(3)
          }
          mine.withLock { $0 = nil }
        }
      }
      attackErr("no stale access trapped in time\n")
      exit(2)
    }
    let text = standardError(result)
    #expect(!text.contains("LANDED"), "\(exitReport(result))")
    #expect(
      text.contains("checkout has ended") || text.contains("no stale access trapped in time"),
      "\(exitReport(result))")
  }

  @Test func aWriteNextBodyCanWaitForAnotherThreadThatReadsAndWrites() {
    let box = ThreadSafeSingleWriter(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let outcome = Locked<DispatchTimeoutResult?>(nil)
    DispatchQueue.global().async {
      box.writeNext { proxy in
        proxy.write = 1
        let helper = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
          let seen = box.read  // a read while the body holds the checkout
          proxy.write += seen  // and a write through the body's proxy, elsewhere
          helper.signal()
        }
        outcome.withLock { $0 = helper.wait(timeout: .now() + 60) }
        proxy.write += 1
      }
      finished.signal()
    }
    #expect(finished.wait(timeout: .now() + 60) == .success)
    #expect(outcome.withLock { $0 } == .success, "the helper thread was never blocked")
    #expect(box.read == 3)
  }

  @Test func queuedWritesThatKeepTheirProxiesDrainWithoutRecursion() async {
    final class Holder: @unchecked Sendable {
      // Sendable: touched by one queued write, on the thread that runs it.
      var proxy: ThreadSafeWriterProxy<Int>?
    }
    let drained = await runOnThread(stackSize: 64 << 10) {
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      for _ in 0..<100_000 {
        let holder = Holder()
        box.writeNext { proxy in
          proxy.write += 1
          holder.proxy = proxy  // freed with the closure, ending the checkout in `deinit`
        }
      }
      held = nil
      _ = held
      return box.read
    }
    #expect(drained == 100_000)
  }

  @Test func aProxyReleasedOnAnotherThreadWhileTheQueueRunsNeverRecursesOrLosesWrites() {
    let box = ThreadSafeSingleWriter(value: 0)
    let count = 20_000
    var held = box.writer
    let group = DispatchGroup()
    for index in 0..<count {
      box.writeNext { proxy in
        proxy.write += 1
        if index % 2 == 0 {
          group.enter()
          DispatchQueue.global().async {
            withExtendedLifetime(proxy) {}
            group.leave()
          }
        }
      }
    }
    held = nil
    _ = held
    group.wait()
    box.withWriter { _ in }
    #expect(box.read == count)
    #expect(box.pendingCount == 0)
  }
}

extension ThreadSafeSingleWriterHostileTests {
  // MARK: No loss (Promises.md): lent proxies used and handed back on other threads

  @Test func aLentProxyUsedByAnotherThreadWhileTheLendResolvesLosesNoWrite() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let rounds = 300
    let perRound = 200
    let done = DispatchSemaphore(value: 0)
    for _ in 0..<rounds {
      let start = DispatchSemaphore(value: 0)
      box.writeNext { proxy in
        Thread.detachNewThread {
          start.wait()
          for _ in 0..<perRound { proxy.write += 1 }
          done.signal()
        }
        start.signal()  // the thread starts writing as the body returns
      }
      done.wait()
    }
    await waitUntil { box.writer != nil }
    #expect(box.read == rounds * perRound)
  }

  /// Two servers at once. M serves; write E1 keeps its proxy and gives it to thread T,
  /// and E1's closure takes 50 ms to be freed (a capture's deinit). Meanwhile T releases
  /// the proxy and starts serving the same batch: E2 keeps its proxy and drops it while
  /// its closure is freed on T, which hands the checkout back to T's run. M, back from
  /// E1, calls `proxyKept`, finds T's `handedBack`, and goes on serving too; T then
  /// stops and clears `server`. M now serves with `server == 0`: a nested writeNext from
  /// one of its own writes, once M is late, chooses M as its own successor, and M waits
  /// for itself. The schedule is forced by sleeps in deinits and bodies.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func aHandBackIsNeverTakenByAThreadThatNoLongerServes() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let box = ThreadSafeSingleWriter(value: 0)
      let given = Locked<ThreadSafeWriterProxy<Int>?>(nil)
      let serving = Locked<[String]>([])
      Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 5)
        attackErr(
          "WATCHDOG: stolen hand-back hung; log: \(serving.withLock { $0 }) value \(box.read)\n")
        _exit(3)
      }
      var held = box.writer
      do {
        let slow = SleepsInDeinit(50)
        box.writeNext { [slow] proxy in  // E1: keeps its proxy, for T
          withExtendedLifetime(slow) {}
          serving.withLock { $0.append("E1@\(sw_current_thread())") }
          proxy.write += 1
          given.withLock { $0 = proxy }
        }
        let holder = SleepsInDeinit(100)
        box.writeNext { [holder] proxy in  // E2: run by T; keeps, then hands back
          serving.withLock { $0.append("E2@\(sw_current_thread())") }
          proxy.write += 1
          holder.proxy = proxy
        }
        box.writeNext { proxy in  // E3: run by M after the steal
          serving.withLock {
            $0.append("E3@\(sw_current_thread()) server=\(box.handOff.pointee.server)")
          }
          usleep(100_000)
          serving.withLock { $0.append("E3 after sleep: server=\(box.handOff.pointee.server)") }
          proxy.write += 1
          box.writeNext { proxy in  // A
            serving.withLock {
              $0.append(
                "A@\(sw_current_thread()) server=\(box.handOff.pointee.server) successorWanted=\(box.handOff.pointee.successorWanted)"
              )
            }
            proxy.write += 1
            box.writeNext { $0.write += 1 }  // B
          }
        }
      }
      let t = Thread {
        while given.withLock({ $0 }) == nil { usleep(100) }
        usleep(5_000)
        serving.withLock { $0.append("T=\(sw_current_thread())") }
        given.withLock { $0 = nil }  // T ends the kept checkout: T serves
      }
      t.start()
      serving.withLock { $0.append("M=\(sw_current_thread())") }
      held = nil  // M serves
      _ = held
      precondition(eventually(atMost: 60) { box.writer != nil }, "writer never came back")
      precondition(box.read == 5, "value \(box.read)")
    }
    expectExit(result, 0)
  }
}
