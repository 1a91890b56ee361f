import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Hostile tests for the rewritten thread-safe core (WriterWord, HandOff, serving
// hand-over, await write, checkout()). Anything that could hang runs in an exit test with
// a watchdog that exits with status 3 and prints "WATCHDOG", so a hang is reported as
// such instead of hanging the runner.

/// Exits the process with status 3 after `seconds`: a hang shows as exit code 3.
func attackWatchdog(_ seconds: Double, _ label: String) {
  Thread.detachNewThread {
    Thread.sleep(forTimeInterval: seconds)
    attackErr("WATCHDOG: \(label) hung after \(seconds) s\n")
    _exit(3)
  }
}

/// Busy-waits `nanoseconds`, without giving up the CPU.
func attackSpin(_ nanoseconds: UInt64) {
  let end = DispatchTime.now().uptimeNanoseconds &+ nanoseconds
  while DispatchTime.now().uptimeNanoseconds < end {}
}

func attackErr(_ text: String) {
  FileHandle.standardError.write(Data(text.utf8))
}

func attackNow() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Keeps a proxy; its deinit drops it (which hands the checkout back to the queue run on
/// this thread) and then calls back into the container.
final class HoldsProxyThenCallsBack: @unchecked Sendable {
  let box: ThreadSafeSingleWriter<Int>
  var proxy: ThreadSafeWriterProxy<Int>?
  init(_ box: ThreadSafeSingleWriter<Int>) { self.box = box }
  deinit {
    proxy = nil
    box.withWriter { $0 += 100 }
  }
}

/// Keeps a proxy; its deinit drops it and queues a write.
final class HoldsProxyThenQueues: @unchecked Sendable {
  let box: ThreadSafeSingleWriter<Int>
  var proxy: ThreadSafeWriterProxy<Int>?
  init(_ box: ThreadSafeSingleWriter<Int>) { self.box = box }
  deinit {
    proxy = nil
    box.writeNext { $0.write += 100 }
  }
}

/// An immutable reference, for values with references under TSan.
final class Ref: Sendable {
  let n: Int
  let tag: String
  init(_ n: Int) {
    self.n = n
    self.tag = "ref-\(n)"
  }
}

struct Rich: Sendable {
  var count = 0
  var items: [Int] = []
  var name = "0"
  var ref = Ref(0)
  mutating func bump() {
    count += 1
    items.append(count)
    name = String(count)
    ref = Ref(count)
  }
  var isWhole: Bool {
    items.count == count && name == String(count) && ref.n == count && ref.tag == "ref-\(count)"
      && (count == 0 || items.last == count)
  }
}

func exitReport(_ result: ExitTest.Result?) -> String {
  guard let result else { return "no result" }
  let err = String(decoding: result.standardErrorContent, as: UTF8.self)
  return "status: \(result.exitStatus), stderr: \(err.suffix(1500))"
}

@Suite(.serialized) struct AttackTests {
  // MARK: Promise 2: serving hand-over makes writeNext block

  /// A queued body hands work to a worker thread and waits for it (as with
  /// `DispatchQueue.main.sync`); the worker queues a write on the same container. If the
  /// worker is chosen as successor, it blocks in writeNext until the batch ends, and the
  /// batch waits for the worker.
  @Test func aQueuedBodyWaitingForAWorkerThatCallsWriteNextFinishes() async {
    let result = await #expect(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
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
      usleep(2_000)
      held.withLock { $0 = nil }
      done.wait()
      // Quiescence: drain by taking the writer once.
      box.withWriter { _ in }
      precondition(box.read == 2 * total, "lost writes: \(box.read)")
    }
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
  }

  // MARK: Promise 5: a deinit after a kept proxy was handed back

  /// A queued write keeps its proxy in an object that only its closure holds. When the
  /// closure is freed on the serving thread, the object's deinit drops the proxy (the
  /// checkout is handed back to the run on this thread) and then calls `withWriter`.
  /// The docs: "a deinit there that waits for the same container stops with a message
  /// instead of hanging".
  @Test func aDeinitThatDropsAKeptProxyThenWaitsStopsInsteadOfHanging() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "deinit after hand-back")
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      do {
        let holder = HoldsProxyThenCallsBack(box)
        box.writeNext { [holder] proxy in holder.proxy = proxy }
      }
      held = nil
      _ = held
      attackErr("returned, value \(box.read)\n")
      exit(0)
    }
    #expect(result?.exitStatus != .exitCode(3), "hung: \(exitReport(result))")
    let err = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
    #expect(err.contains("would wait forever"), "\(exitReport(result))")
  }

  /// The same hand-back, with a writeNext instead: the run goes on and runs it.
  @Test func aDeinitThatDropsAKeptProxyThenQueuesRunsItsWrite() async {
    let result = await #expect(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "deinit after hand-back, queueing")
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      do {
        let holder = HoldsProxyThenQueues(box)
        box.writeNext { [holder] proxy in
          proxy.write += 1
          holder.proxy = proxy
        }
      }
      box.writeNext { $0.write += 10 }
      held = nil
      _ = held
      precondition(box.read == 111, "value \(box.read)")
      precondition(box.writer != nil, "writer still out")
    }
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
  }

  // MARK: Promise 3: a queued await write's body calling back into the container

  @Test func withWriterInsideAQueuedAsyncBodyStopsWithAMessage() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter in a queued async body")
      let box = ThreadSafeSingleWriter(value: 0)
      let held = Locked(box.writer)
      let task = Task {
        await box.write { v in
          box.withWriter { $0 += 1 }
          v += 1
        }
      }
      while box.pendingCount < 1 { usleep(100) }
      held.withLock { $0 = nil }  // this thread runs the body
      let semaphore = DispatchSemaphore(value: 0)
      Task {
        await task.value
        semaphore.signal()
      }
      semaphore.wait()
    }
    #expect(result?.exitStatus != .exitCode(3), "hung: \(exitReport(result))")
    let err = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
    #expect(err.contains("would wait forever"), "\(exitReport(result))")
  }

  @Test func readInsideAQueuedAsyncBodyStopsWithAMessage() async {
    let result = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "read in a queued async body")
      let box = ThreadSafeSingleWriter(value: "a")
      let held = Locked(box.writer)
      let task = Task { await box.write { v in v += box.read } }
      while box.pendingCount < 1 { usleep(100) }
      held.withLock { $0 = nil }
      let semaphore = DispatchSemaphore(value: 0)
      Task {
        await task.value
        semaphore.signal()
      }
      semaphore.wait()
    }
    #expect(result?.exitStatus != .exitCode(3), "hung: \(exitReport(result))")
    let err = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
    #expect(err.contains("would wait forever"), "\(exitReport(result))")
  }

  @Test func writeNextInsideAQueuedAsyncBodyRunsAfterIt() async throws {
    let box = ThreadSafeSingleWriter(value: [Int]())
    let held = Locked(box.writer)
    let task = Task {
      await box.write { v in
        box.writeNext { $0.write.append(2) }
        v.append(1)
      }
    }
    while box.pendingCount < 1 { try await Task.sleep(for: .microseconds(100)) }
    box.writeNext { $0.write.append(3) }  // queued before the nested one
    held.withLock { $0 = nil }
    await task.value
    #expect(box.read == [1, 3, 2])
    #expect(box.writer != nil)
  }

  @Test func throwingQueuedAsyncBodiesRethrowAndLeaveTheContainerUsable() async throws {
    struct Boom: Error {}
    let box = ThreadSafeSingleWriter(value: 0)
    for _ in 0..<200 {
      let held = Locked(box.writer)
      let tasks = (0..<6).map { i in
        Task { () -> Result<Int, any Error> in
          do {
            return .success(
              try await box.write { v -> Int in
                if i % 2 == 0 { throw Boom() }
                v += 1
                return v
              })
          } catch { return .failure(error) }
        }
      }
      while box.pendingCount < 6 { try await Task.sleep(for: .microseconds(50)) }
      held.withLock { $0 = nil }
      for (i, task) in tasks.enumerated() {
        switch await task.value {
        case .success: #expect(i % 2 == 1)
        case .failure(let error): #expect(i % 2 == 0 && error is Boom, "\(error)")
        }
      }
    }
    #expect(box.read == 600)
    #expect(box.writer != nil)
  }

  // MARK: Promise 3: cancellation racing the server

  @Test func cancellationRacingTheServerNeverLosesOrDoublesAWrite() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let succeeded = Counter()
    let cancelledAfterRunning = Counter()
    for round in 0..<400 {
      let held = Locked(box.writer)
      let ranFlags = (0..<8).map { _ in Counter() }
      let tasks = (0..<8).map { i in
        Task { () -> Void in
          do {
            try await box.writeUnlessCancelled { v in
              v += 1
              ranFlags[i].add(1)
            }
            succeeded.add(1)
          } catch {
            if ranFlags[i].load() != 0 { cancelledAfterRunning.add(1) }
          }
        }
      }
      let releaser = Thread {
        attackSpin(UInt64((round % 7) * 3_000))
        held.withLock { $0 = nil }
      }
      releaser.start()
      attackSpin(UInt64((round % 5) * 4_000))
      for (i, task) in tasks.enumerated() where (i + round) % 2 == 0 { task.cancel() }
      for task in tasks { await task.value }
      for flag in ranFlags { #expect(flag.load() <= 1) }
    }
    await waitUntil { box.writer != nil }
    #expect(box.read == succeeded.load(), "value vs. successful writes")
    #expect(cancelledAfterRunning.load() == 0)
  }

  // MARK: Promise 4: checkout() starvation under a stream of writeNext

  @Test(arguments: [2, 4])
  func aCheckoutIsNotStarvedByAStreamOfQueuedWrites(producers: Int) async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    let stop = Counter()
    let finished = DispatchSemaphore(value: 0)
    for _ in 0..<producers {
      Thread.detachNewThread {
        while stop.load() == 0 {
          box.writeNext { proxy in
            attackSpin(2_000)
            proxy.write += 1
          }
        }
        finished.signal()
      }
    }
    try await Task.sleep(for: .milliseconds(100))
    let waited = Task { () -> Bool in
      let proxy = try await box.checkout()
      // Whether the stream was still going when this task got the writer.
      let stoppedFirst = stop.load() != 0
      proxy.write += 1_000_000
      return stoppedFirst
    }
    // Stop the producers after 3 s whatever happens, so the test ends.
    let stopper = Task {
      try? await Task.sleep(for: .seconds(3))
      stop.store(1)
    }
    let stoppedFirst = try await waited.value
    stop.store(1)
    await stopper.value
    for _ in 0..<producers { finished.wait() }
    #expect(!stoppedFirst, "checkout only got the writer after the producers stopped")
  }

  // MARK: Promise 3/4: checkout held across an await, withWriter on every pool thread

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

  // MARK: Promise 2: quiescence and FIFO under many producers, nested writes, waits

  @Test func quiescenceUnderMixedProducersInAChild() async {
    let result = await #expect(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
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
      var spins = 0
      while box.writer == nil {
        usleep(1_000)
        spins += 1
        precondition(spins < 5_000, "writer never came back")
      }
      let value = box.read
      for thread in 0..<threads {
        precondition(value[thread] == Array(0..<perThread), "thread \(thread) out of order or lost")
      }
      let nested = (0..<threads).reduce(0) { $0 + (value[1_000 + $1]?.count ?? 0) }
      precondition(nested == expectedExtra.load(), "nested \(nested) vs \(expectedExtra.load())")
    }
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
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

  // MARK: Promise 7: readers never see half a write, non-POD values

  @Test func readersSeeWholeRichValuesUnderEveryKindOfWrite() async throws {
    let box = ThreadSafeSingleWriter(value: Rich())
    let stop = Counter()
    let torn = Counter()
    let readerDone = DispatchSemaphore(value: 0)
    for _ in 0..<2 {
      Thread.detachNewThread {
        while stop.load() == 0 {
          if !box.read.isWhole { torn.add(1) }
        }
        readerDone.signal()
      }
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<4 {
        group.addTask {
          for index in 0..<1_500 {
            switch (index + task) % 5 {
            case 0: await box.write { $0.bump() }
            case 1: box.withWriter { $0.bump() }
            case 2: box.writeNext { $0.write.bump() }
            case 3:
              if let writer = box.writer {
                writer.write.bump()
              } else {
                box.writeNext { $0.write.bump() }
              }
            default:
              let proxy = try await box.checkout()
              proxy.write.bump()
            }
          }
        }
      }
      try await group.waitForAll()
    }
    stop.store(1)
    readerDone.wait()
    readerDone.wait()
    await waitUntil { box.writer != nil }
    #expect(torn.load() == 0)
    #expect(box.read.count == 6_000)
    #expect(box.read.isWhole)
  }

  // MARK: Promise 8: debug invariants under everything at once, with observers

  @Test func everythingAtOnceWithAnObserverInAChild() async {
    let result = await #expect(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
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
      var spins = 0
      while box.writer == nil {
        usleep(1_000)
        spins += 1
        precondition(spins < 5_000)
      }
      let value = box.read
      precondition(value.a == value.b)
      precondition(value.a == expected.load(), "value \(value.a) vs expected \(expected.load())")
      precondition(observed.load() > 0)
    }
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
  }
}

/// Sleeps in its deinit: widens the window between a queued write's end and what the
/// serving thread does next.
final class SleepsInDeinit: @unchecked Sendable {
  let milliseconds: UInt32
  init(_ milliseconds: UInt32) { self.milliseconds = milliseconds }
  deinit { usleep(milliseconds * 1_000) }
}

/// Keeps a proxy; its deinit drops it (handing the checkout back to the run on this
/// thread), then sleeps.
final class HoldsProxyThenSleeps: @unchecked Sendable {
  var proxy: ThreadSafeWriterProxy<Int>?
  let milliseconds: UInt32
  init(_ milliseconds: UInt32) { self.milliseconds = milliseconds }
  deinit {
    proxy = nil
    usleep(milliseconds * 1_000)
  }
}

extension AttackTests {
  /// Two servers at once. M serves; write E1 keeps its proxy and gives it to thread T,
  /// and E1's closure takes 50 ms to be freed (a capture's deinit). Meanwhile T releases
  /// the proxy and starts serving the same batch: E2 keeps its proxy and drops it while
  /// its closure is freed on T, which hands the checkout back to T's run. M, back from
  /// E1, calls `proxyKept`, finds T's `handedBack`, and goes on serving too; T then
  /// stops and clears `server`. M now serves with `server == 0`: a nested writeNext from
  /// one of its own writes, once M is late, chooses M as its own successor, and M waits
  /// for itself.
  @Test func aHandBackIsNeverTakenByAThreadThatNoLongerServes() async {
    let result = await #expect(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
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
        let holder = HoldsProxyThenSleeps(100)
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
      var spins = 0
      while box.writer == nil {
        usleep(1_000)
        spins += 1
        precondition(spins < 2_000, "writer never came back")
      }
      precondition(box.read == 5, "value \(box.read)")
    }
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
  }
}

extension AttackTests {
  // MARK: Promise 4, control: the same stream does not starve withWriter or await write

  @Test func aCheckoutCancelledAfterBeingWokenEitherHoldsTheWriterOrThrows() async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    var gotIt = 0
    var threw = 0
    for round in 0..<300 {
      var first = box.writer
      while first == nil {
        try await Task.sleep(for: .microseconds(50))
        first = box.writer
      }
      let held = Locked(first)
      first = nil
      let task = Task { () -> Bool in
        do {
          let proxy = try await box.checkout()
          proxy.write += 1
          return true
        } catch { return false }
      }
      var polls = 0
      while box.pendingCount < 1 {
        try await Task.sleep(for: .microseconds(50))
        polls += 1
        if polls == 20_000 {
          attackErr("round \(round): checkout never queued, writer out: \(box.writer == nil)\n")
        }
      }
      // A newcomer takes the writer right after the release, sometimes, so the woken
      // task must queue again; cancel around then.
      let releaser = Thread {
        held.withLock { $0 = nil }
        if round % 2 == 0, let writer = box.writer {
          attackSpin(20_000)
          _ = writer
        }
      }
      releaser.start()
      attackSpin(UInt64(round % 10) * 2_000)
      task.cancel()
      let taskDone = Counter()
      let watch = Thread {
        Thread.sleep(forTimeInterval: 3)
        if taskDone.load() == 0 {
          attackErr(
            "round \(round): checkout task still waiting after 3 s; pending \(box.pendingCount), word \(box.lock.word), value \(box.read), round \(round)\n"
          )
        }
      }
      watch.start()
      if await task.value { gotIt += 1 } else { threw += 1 }
      taskDone.store(1)
    }
    await waitUntil { box.writer != nil }
    #expect(box.read == gotIt, "writes \(box.read) vs checkouts \(gotIt), threw \(threw)")
    #expect(box.pendingCount == 0)
  }

  // MARK: Promise 7: writers under a stream of readers of a value with references

  @Test func aWriterIsNotStarvedByAStreamOfReaders() async throws {
    let box = ThreadSafeSingleWriter(value: Array(repeating: 1, count: 64))
    let stop = Counter()
    let finished = DispatchSemaphore(value: 0)
    let readers = 4
    for _ in 0..<readers {
      Thread.detachNewThread {
        var sum = 0
        while stop.load() == 0 { sum &+= box.read.count }
        _ = sum
        finished.signal()
      }
    }
    try await Task.sleep(for: .milliseconds(50))
    let worst = await runOnThread(stackSize: 1 << 20) { () -> UInt64 in
      var worst: UInt64 = 0
      for _ in 0..<200 {
        let start = attackNow()
        box.withWriter { $0.append(1) }
        worst = max(worst, attackNow() - start)
      }
      return worst
    }
    stop.store(1)
    for _ in 0..<readers { finished.wait() }
    // Starvation would never end: this bound is a watchdog, not a timing.
    #expect(worst < 10_000_000_000, "a write waited \(worst / 1_000_000) ms for readers")
  }

  // MARK: Promise 2: a successor is dismissed when the server hands off to a waiter

  @Test func successorsAreDismissedWhenTheServerHandsTheCheckoutOnInAChild() async {
    let result = await #expect(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
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
        usleep(2_000)
        held.withLock { $0 = nil }
        group.wait()
        var spins = 0
        while box.writer == nil {
          usleep(1_000)
          spins += 1
          precondition(spins < 10_000, "writer never came back")
        }
        precondition(
          box.read == expected.load(), "round \(round): \(box.read) vs \(expected.load())")
      }
    }
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
  }
}
