import Dispatch
import Foundation
import Testing

@testable import SingleWriter

extension ThreadSafeSingleWriterTests {
  // MARK: Quiescence, A release pays its debts, Serving is bounded, writeNext never waits

  /// Another thread keeps queueing while this one serves for over a millisecond: the
  /// serving role may move on, but only after the write this thread queued has run. The
  /// nested write that one queues runs on borrowed time: once the producer stops, it has
  /// run too. (A release that owed it could never return behind a chain of them under a
  /// stream: see Promises.md, "A release pays its debts".) The write sleeps past the
  /// server's millisecond.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func aReleaseReturnsOnlyAfterTheWritesItQueuedAndTheirNestedOnesRunInTheEnd() {
    let box = ThreadSafeSingleWriter(value: [String]())
    var held = box.writer
    box.writeNext { proxy in
      proxy.write.append("outer")
      // Well past the server's slice.
      Thread.sleep(forTimeInterval: 3 * Double(HandOffPolicy.servingSlice) / 1e9)
      box.writeNext { $0.write.append("nested") }
    }
    let producer = Repeating { box.writeNext { $0.write.append("other") } }
    #expect(eventually { box.pendingCount >= 2 }, "the producer never queued")
    held = nil  // this thread serves: "outer", then others' writes for a millisecond
    let outerRan = box.read.contains("outer")
    producer.stop()  // every call has returned: the nested write has run
    #expect(outerRan, "the release returned before the write it queued had run")
    #expect(box.read.contains("nested"))
    _ = held
  }

  /// Slow writes keep arriving from another thread while this one serves: whoever serves
  /// them past this thread's millisecond must be a caller that has not returned yet. The
  /// producer goes on for 20 ms after the release.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func everyWriteHasRunWhenTheReleaseAndTheProducerHaveReturned() {
    let box = ThreadSafeSingleWriter(value: 0)
    let produced = Counter()
    var held = box.writer
    let producer = Repeating {
      box.writeNext { proxy in
        attackSpin(20_000)
        proxy.write += 1
      }
      produced.add(1)
    }
    #expect(eventually { produced.load() >= 100 })
    held = nil  // this thread serves the backlog, then the producer's stream, for a while
    usleep(20_000)
    producer.stop()
    #expect(box.read == produced.load(), "a write was still running after every call returned")
    _ = held
  }

  @Test func everyWriteHasRunWhenConcurrentPerformReturns() {
    // The README's example, repeated: no write may still be running on another thread
    // once every call has returned.
    struct Stats: Sendable { var hits = 0, misses = 0 }
    for _ in 0..<20 {
      let stats = ThreadSafeSingleWriter(value: Stats())
      DispatchQueue.concurrentPerform(iterations: 10_000) { _ in
        let done: Void? = stats.tryWrite {
          $0.hits += 1
          $0.misses += 0
        }
        if done == nil {
          stats.writeNext {
            $0.write.hits += 1
            $0.write.misses += 0
          }
        }
      }
      #expect(stats.read.hits == 10_000)
    }
  }

  /// Producers keep queueing while this thread ends a checkout: past about a millisecond
  /// of serving their writes, a helper thread takes the queue over and this one returns,
  /// while the producers are still at it, having spent little CPU time serving. Bodies of
  /// 2 µs let the producers outpace one server, so that without the hand-off the queue
  /// never empties. No wall time is checked: the producers stop once the release has
  /// returned, or after a watchdog's 120 s, so that without the hand-off this test fails
  /// instead of hanging.
  @Test func theThreadThatEndsACheckoutIsNotKeptServingOthersForever() {
    let box = ThreadSafeSingleWriter(value: 0)
    let queued = Counter()
    var held = box.writer
    let producers = Repeating(threads: 2, seconds: 120) {
      box.writeNext { proxy in
        attackSpin(2_000)
        proxy.write += 1
      }
      queued.add(1)
    }
    #expect(eventually(atMost: 60) { queued.load() >= 1_000 })
    let cpu = threadCPUTime()
    held = nil  // this thread now serves the queue, for a while
    let served = threadCPUTime() - cpu
    let stillProducing = !producers.isStopped
    producers.stop()
    box.withWriter { _ in }
    #expect(stillProducing, "the release served until the producers stopped")
    #expect(
      served < servingCPUBound, "the release served others for \(served / 1_000_000) ms of CPU")
    #expect(box.read == queued.load(), "no queued write lost")
    _ = held
  }

  /// Past 4,096 waiting writes, a `writeNext` from another thread than the queue's runner
  /// yields its time slice: it must still return while the runner is stuck, and lose or
  /// reorder nothing.
  @Test func aDeepBacklogBehindABusyRunnerNeverMakesWriteNextWait() {
    let box = ThreadSafeSingleWriter(value: [Int]())
    let held = Locked(box.writer)
    let gate = DispatchSemaphore(value: 0)
    let running = DispatchSemaphore(value: 0)
    box.writeNext { proxy in
      running.signal()
      gate.wait()  // the runner is stuck here, holding the checkout
      proxy.write.append(-1)
    }
    let released = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      held.withLock { $0 = nil }  // this thread runs the queue
      released.signal()
    }
    running.wait()
    #expect(box.lock.withHandOffLock { box.handOff.pointee.server } != 0)
    for value in 0..<10_000 { box.writeNext { $0.write.append(value) } }
    #expect(box.pendingCount == 10_000, "every call returned with the runner stuck")
    gate.signal()
    released.wait()
    // The rest may have gone to a helper thread: withWriter waits behind all of it.
    #expect(box.withWriter { $0 } == [-1] + Array(0..<10_000))
  }
}

extension ThreadSafeSingleWriterHostileTests {
  // MARK: Quiescence, writeNext never waits (Promises.md): producers, nested writes, successors

  /// A queued body hands work to a worker thread and waits for it (as with
  /// `DispatchQueue.main.sync`); the worker queues a write on the same container. If the
  /// worker is chosen as successor, it blocks in writeNext until the batch ends, and the
  /// batch waits for the worker.
  @Test func aQueuedBodyWaitingForAWorkerThatCallsWriteNextFinishes() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "body waiting for a writeNext on another thread")
      let box = ThreadSafeSingleWriter(value: 0)
      let worker = DispatchQueue(label: "worker")
      let total = 400
      let done = DispatchSemaphore(value: 0)
      let held = Locked(box.writer)
      Thread.detachNewThread {
        for index in 0..<total {
          box.writeNext { proxy in
            attackSpin(20_000)
            let finished = DispatchSemaphore(value: 0)
            worker.async {
              box.writeNext { $0.write += 1 }  // "returns at once"
              finished.signal()
            }
            finished.wait()
            proxy.write += 1
          }
          // A burst that keeps the server busy past its millisecond, then a trickle, so
          // that the workers are the ones that queue while the server is late.
          if index >= 100 { usleep(300) }
        }
        done.signal()
      }
      precondition(eventually { box.pendingCount >= 100 }, "the burst never queued")
      held.withLock { $0 = nil }
      done.wait()
      // Quiescence: drain by taking the writer once.
      box.withWriter { _ in }
      precondition(box.read == 2 * total, "lost writes: \(box.read)")
    }
    expectExit(result, 0)
  }

  @Test func quiescenceUnderMixedProducersInAChild() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(60, "mixed producers")
      let box = ThreadSafeSingleWriter(value: [Int: [Int]]())
      let threads = 6
      let perThread = 4_000
      let expectedExtra = Counter()
      DispatchQueue.concurrentPerform(iterations: threads) { thread in
        for index in 0..<perThread {
          switch (index &* 7 &+ thread) % 11 {
          case 0:
            box.withWriter { $0[thread, default: []].append(index) }
          case 1:
            if box.tryWrite({ $0[thread, default: []].append(index) }) == nil {
              box.writeNext { $0.write[thread, default: []].append(index) }
            }
          case 2:
            // A nested write from a queued body, to another key.
            expectedExtra.add(1)
            box.writeNext { proxy in
              proxy.write[thread, default: []].append(index)
              box.writeNext { $0.write[1_000 + thread, default: []].append(index) }
            }
          case 3:
            if let writer = box.writer {
              writer.write[thread, default: []].append(index)
              attackSpin(5_000)
            } else {
              box.writeNext { $0.write[thread, default: []].append(index) }
            }
          case 4:
            // A queued body that keeps its proxy for a moment on another thread.
            box.writeNext { proxy in
              proxy.write[thread, default: []].append(index)
              let hold = Locked(Optional(proxy))
              DispatchQueue.global().async {
                attackSpin(2_000)
                hold.withLock { $0 = nil }
              }
            }
          default:
            box.writeNext { proxy in
              attackSpin(500)
              proxy.write[thread, default: []].append(index)
            }
          }
        }
      }
      // Every call has returned, except proxies released on the global queue: wait for
      // the writer to come back, then check.
      precondition(eventually(atMost: 60) { box.writer != nil }, "writer never came back")
      let value = box.read
      for thread in 0..<threads {
        precondition(value[thread] == Array(0..<perThread), "thread \(thread) out of order or lost")
      }
      let nested = (0..<threads).reduce(0) { $0 + (value[1_000 + $1]?.count ?? 0) }
      precondition(nested == expectedExtra.load(), "nested \(nested) vs \(expectedExtra.load())")
    }
    expectExit(result, 0)
  }

  /// Quiescence, strictly: no proxy crosses threads, so when every producer returned,
  /// every write has run, with no waiting.
  @Test func everyWriteRanWhenEveryProducerReturned() async {
    for round in 0..<20 {
      let box = ThreadSafeSingleWriter(value: 0)
      let threads = 4
      let perThread = 3_000
      DispatchQueue.concurrentPerform(iterations: threads) { thread in
        for index in 0..<perThread {
          if (index + thread) % 5 == 0 {
            box.withWriter { $0 += 1 }
          } else {
            box.writeNext { proxy in
              attackSpin(300)
              proxy.write += 1
            }
          }
        }
      }
      let seen = box.read
      #expect(seen == threads * perThread, "round \(round): \(seen)")
      #expect(box.writer != nil, "round \(round): writer still out")
      if seen != threads * perThread { break }
    }
  }

  /// The same from tasks on the cooperative pool: successors are pool threads, and writes
  /// mix writeNext, await write and withWriter.
  @Test func everyWriteRanWhenEveryTaskReturned() async throws {
    for round in 0..<10 {
      let box = ThreadSafeSingleWriter(value: 0)
      try await withThrowingTaskGroup(of: Void.self) { group in
        for task in 0..<8 {
          group.addTask {
            for index in 0..<1_000 {
              switch (index + task) % 3 {
              case 0: await box.write { $0 += 1 }
              case 1: box.withWriter { $0 += 1 }
              default:
                box.writeNext { proxy in
                  attackSpin(300)
                  proxy.write += 1
                }
              }
            }
          }
        }
        try await group.waitForAll()
      }
      #expect(box.read == 8_000, "round \(round)")
      #expect(box.writer != nil, "round \(round)")
    }
  }

  @Test func successorsAreDismissedWhenTheServerHandsTheCheckoutOnInAChild() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(60, "successor dismissal")
      for round in 0..<30 {
        let box = ThreadSafeSingleWriter(value: 0)
        let expected = Counter()
        let held = Locked(box.writer)
        let group = DispatchGroup()
        for thread in 0..<4 {
          DispatchQueue.global().async(group: group) {
            for index in 0..<300 {
              switch (index + thread + round) % 6 {
              case 0:
                box.withWriter { $0 += 1 }
                expected.add(1)
              case 1:
                // Keeps its proxy, released on another thread shortly.
                expected.add(1)
                box.writeNext { proxy in
                  attackSpin(30_000)
                  proxy.write += 1
                  let hold = Locked(Optional(proxy))
                  DispatchQueue.global().async { hold.withLock { $0 = nil } }
                }
              default:
                expected.add(1)
                box.writeNext { proxy in
                  attackSpin(30_000)
                  proxy.write += 1
                }
              }
            }
          }
        }
        precondition(eventually { box.pendingCount > 0 }, "nothing queued")
        held.withLock { $0 = nil }
        group.wait()
        precondition(eventually(atMost: 60) { box.writer != nil }, "writer never came back")
        precondition(
          box.read == expected.load(), "round \(round): \(box.read) vs \(expected.load())")
      }
    }
    expectExit(result, 0)
  }
}
