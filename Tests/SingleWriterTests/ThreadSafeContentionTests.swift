import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

extension ThreadSafeSingleWriterTests {
  // MARK: One writer, No loss, Fair to withWriter (Promises.md): contention

  @Test(arguments: [2, 4, 8])
  func stress(threads: Int) {
    let box = ThreadSafeSingleWriter(value: Pair())
    let tally = Tally()
    let torn = Locked(0)
    let group = DispatchGroup()
    let iterations = 600
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      var rng = CheckerRandom(seed: UInt64(thread))
      for _ in 0..<iterations {
        switch rng.next() % 6 {
        case 0:
          if let proxy = box.writer {
            tally.enter()
            proxy.write.bump()
            tally.leave()
            tally.add("writes")
          }
        case 1:
          let wrote = box.tryWrite { (value: inout Pair) -> Bool in
            tally.enter()
            value.bump()
            tally.leave()
            return true
          }
          if wrote == true { tally.add("writes") }
        case 2:
          tally.add("queued")
          box.writeNext { proxy in
            tally.enter()
            proxy.write.bump()
            tally.leave()
            tally.add("queued ran")
          }
        case 3:
          box.withWriter { value in
            tally.enter()
            value.bump()
            tally.leave()
          }
          tally.add("writes")
        case 4:
          // Check out here, write and release on another thread.
          if let proxy = box.writer {
            group.enter()
            tally.add("writes")
            DispatchQueue.global().async {
              tally.enter()
              proxy.write.bump()
              tally.leave()
              group.leave()
            }
          }
        default:
          let value = box.read
          if value.a != value.b { torn.withLock { $0 += 1 } }
        }
      }
    }
    group.wait()
    // The last release may still be draining on another thread.
    box.withWriter { _ in }
    #expect(tally["queued ran"] == tally["queued"], "every queued write ran")
    #expect(box.read.a == tally["writes"] + tally["queued"], "no write lost or doubled")
    #expect(box.read.a == box.read.b)
    #expect(torn.withLock { $0 } == 0, "no torn read")
    #expect(tally.maxInside == 1, "two writers were never out at once")
    #expect(box.writer != nil, "the writer is free at the end")
  }

  @Test(arguments: [2, 4, 8])
  func contendedWithWriterLosesNothingAndNeverStarves(threads: Int) {
    let box = ThreadSafeSingleWriter(value: 0)
    let perThread = 20_000
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
      for _ in 0..<perThread { box.withWriter { $0 += 1 } }
    }
    #expect(box.read == threads * perThread)
    #expect(box.writer != nil)
  }

  @Test(arguments: [2, 4, 8])
  func contendedWriteNextRunsEveryClosureOnceInFIFOOrderPerThread(threads: Int) {
    let box = ThreadSafeSingleWriter(value: [Int: [Int]]())
    let perThread = 5_000
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      for index in 0..<perThread {
        box.writeNext { $0.write[thread, default: []].append(index) }
      }
    }
    box.withWriter { _ in }
    let result = box.read
    for thread in 0..<threads {
      #expect(result[thread] == Array(0..<perThread), "thread \(thread)'s writes ran in order")
    }
  }

  @Test func aWaiterBehindABusyThreadIsServedWithinItsTurn() {
    // One thread takes the writer back-to-back; another must still get in. Without a
    // hand-off for long waiters, barging could keep it out indefinitely.
    let box = ThreadSafeSingleWriter(value: 0)
    let busy = Repeating {
      box.withWriter { value in
        value += 1
        for _ in 0..<1_000 { value = value &+ 0 }
      }
    }
    var served = 0
    for _ in 0..<200 {
      box.withWriter { _ in served += 1 }
    }
    busy.stop()
    #expect(served == 200)
  }

  /// A waiter that had to sleep shortens the next waiters' spin, never below the floor.
  /// (A spin that pays off lengthens it: whether a spin meets the release is timing,
  /// so `ScheduleScenarioTests.theSpinBudgetFollowsHowTheLastWaitEnded` checks that.)
  @Test func withWriterSpinsLessAfterSleeping() {
    let box = ThreadSafeSingleWriter(value: 0)
    let rounds = { sw_load_acquire(box.lock.spinRounds) }
    #expect(rounds() == HandOffPolicy.maxSpinRounds)
    /// Holds the writer until a `withWriter` on another thread has gone to sleep for it.
    func makeAWaiterSleep() {
      let held = Locked(box.writer)
      let done = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        box.withWriter { $0 += 1 }
        done.signal()
      }
      #expect(eventually { box.lock.word.hasParked }, "the waiter never slept")
      held.withLock { $0 = nil }
      done.wait()
    }
    for expected in [HandOffPolicy.maxSpinRounds - 1, HandOffPolicy.maxSpinRounds - 2] {
      makeAWaiterSleep()
      #expect(rounds() == expected)
    }
    for _ in 0..<12 { makeAWaiterSleep() }
    #expect(rounds() == HandOffPolicy.minSpinRounds)
  }

  @Test func proxiesHandedToOtherThreadsAndReusedAreOrderedWithoutRelyingOnARC() {
    // Lent proxies that other threads use and drop, while the queue and parked writers
    // churn: the counts must be exact, and ThreadSanitizer (which does not see ARC's
    // atomics) must find every access ordered by the library's own atomics.
    let box = ThreadSafeSingleWriter(value: 0)
    let handedOff = DispatchGroup()
    DispatchQueue.concurrentPerform(iterations: 4) { thread in
      for index in 0..<500 {
        if (index + thread) % 40 == 0 {
          box.withWriter { value in
            value += 1
            Thread.sleep(forTimeInterval: 0.0005)
          }
        } else if index % 7 == 0 {
          box.writeNext { $0.write += 1 }
        } else if index % 11 == 0 {
          handedOff.enter()
          box.writeNext { proxy in
            DispatchQueue.global().async {
              proxy.write += 1
              handedOff.leave()
            }
          }
        } else {
          box.withWriter { $0 += 1 }
        }
      }
    }
    handedOff.wait()
    box.withWriter { _ in }
    #expect(box.read == 4 * 500)
  }
}

extension ThreadSafeSingleWriterHostileTests {
  // MARK: One writer, No loss (Promises.md): debug invariants under everything at once

  @Test func everythingAtOnceWithAnObserverInAChild() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(90, "everything at once")
      let box = ThreadSafeSingleWriter(value: Pair())
      let semaphore = DispatchSemaphore(value: 0)
      let observed = Counter()
      let stopObserving = Counter()
      Task {
        for await value in box.changes() {
          precondition(value.a == value.b, "observer saw a torn value")
          observed.add(1)
          if stopObserving.load() != 0 { break }
        }
      }
      let expected = Counter()
      Task {
        try await withThrowingTaskGroup(of: Void.self) { group in
          for task in 0..<6 {
            group.addTask {
              for index in 0..<2_000 {
                switch (index * 3 + task) % 9 {
                case 0:
                  await box.write { $0.bump() }
                  expected.add(1)
                case 1:
                  box.withWriter { $0.bump() }
                  expected.add(1)
                case 2:
                  expected.add(1)
                  box.writeNext { $0.write.bump() }
                case 3:
                  let proxy = try await box.checkout()
                  proxy.write.bump()
                  expected.add(1)
                case 4:
                  let t = Task { try await box.writeUnlessCancelled { $0.bump() } }
                  if index % 2 == 0 { t.cancel() }
                  if (try? await t.value) != nil { expected.add(1) }
                case 5:
                  if box.tryWrite({ $0.bump() }) != nil { expected.add(1) }
                case 6:
                  let value = box.read
                  precondition(value.a == value.b)
                case 7:
                  expected.add(2)
                  box.writeNext { proxy in
                    proxy.write.bump()
                    box.writeNext { $0.write.bump() }
                  }
                default:
                  if let writer = box.writer {
                    writer.write.bump()
                    expected.add(1)
                  }
                }
              }
            }
          }
          try await group.waitForAll()
        }
        semaphore.signal()
      }
      semaphore.wait()
      stopObserving.store(1)
      box.withWriter { $0.bump() }
      expected.add(1)
      precondition(eventually(atMost: 60) { box.writer != nil }, "writer never came back")
      let value = box.read
      precondition(value.a == value.b)
      precondition(value.a == expected.load(), "value \(value.a) vs expected \(expected.load())")
      precondition(observed.load() > 0)
    }
    expectExit(result, 0)
  }
}
