import Dispatch
import Foundation
import Observation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// Two fields that every write keeps equal, so a torn read shows as `a != b`.
struct Pair: Sendable, Equatable {
  var a = 0
  var b = 0
  mutating func bump() {
    a += 1
    b += 1
  }
}

/// A thread-safe tally for the tests' own bookkeeping.
final class Tally: @unchecked Sendable {
  // Sendable: every access is under `lock`.
  private let lock = NSLock()
  private var counts: [String: Int] = [:]
  private var inside = 0
  private(set) var maxInside = 0

  func add(_ key: String, _ n: Int = 1) { lock.withLock { counts[key, default: 0] += n } }
  subscript(key: String) -> Int { lock.withLock { counts[key, default: 0] } }
  func enter() {
    lock.withLock {
      inside += 1
      maxInside = max(maxInside, inside)
    }
  }
  func leave() { lock.withLock { inside -= 1 } }
}

/// Appends strings from any thread, in the order they arrive.
final class Log: @unchecked Sendable {
  // Sendable: every access is under `lock`.
  private let lock = NSLock()
  private var items: [String] = []
  func append(_ item: String) { lock.withLock { items.append(item) } }
  var all: [String] { lock.withLock { items } }
}

@Suite struct ThreadSafeSingleWriterTests {
  // MARK: The core rules, as for SingleWriter

  @Test func seedWalkthrough() {
    let currentUser = ThreadSafeSingleWriter(value: Pair())
    var writerReference = currentUser.writer
    writerReference?.write.a = 1
    #expect(currentUser.writer == nil)
    currentUser.writer?.write.a = 99
    #expect(currentUser.read.a == 1)
    currentUser.writeNext { $0.write.a = 2 }
    #expect(currentUser.read.a == 1)
    writerReference = nil
    #expect(currentUser.read.a == 2)
    currentUser.writer?.write.a = 3
    currentUser.writer?.write.b = 10
    #expect(currentUser.read == Pair(a: 3, b: 10))
  }

  @Test func releaseRunsQueuedWritesInFIFOOrderAndFreesTheWriter() {
    let box = ThreadSafeSingleWriter(value: [String]())
    var held = box.writer
    box.writeNext { $0.write.append("a") }
    box.writeNext { $0.write.append("b") }
    #expect(box.tryWrite { $0.append("jumped the queue") } == nil)
    #expect(box.read.isEmpty)
    held = nil
    #expect(box.read == ["a", "b"])
    #expect(box.writer != nil)
    _ = held
  }

  @Test func aQueuedWriteThatKeepsItsProxyHoldsBackTheRest() {
    let box = ThreadSafeSingleWriter(value: [String]())
    let kept = Locked<ThreadSafeWriterProxy<[String]>?>(nil)
    var held = box.writer
    box.writeNext { proxy in
      proxy.write.append("keeper")
      kept.withLock { $0 = proxy }
    }
    box.writeNext { $0.write.append("after") }
    held = nil
    #expect(box.read == ["keeper"])
    #expect(box.writer == nil)
    kept.withLock { $0?.write.append("more") }
    kept.withLock { $0 = nil }
    #expect(box.read == ["keeper", "more", "after"])
    #expect(box.writer != nil)
    _ = held
  }

  /// The shape that lost a queued write on the plain type in release builds (see
  /// SingleWriterTests): the proxy must live until its access has ended.
  @Test func aWriteThroughAHeldProxyFinishesBeforeItsReleaseRunsTheQueue() {
    for count in [0, 1, 7] {
      let box = ThreadSafeSingleWriter(value: [Int](repeating: -1, count: count))
      var held = box.writer
      box.writeNext { $0.write.append(1) }
      held?.write.append(0)
      held = nil
      #expect(box.read.suffix(2) == [0, 1])
      _ = held
    }
  }

  @Test func nestedWriteNextGoesToTheBackOfTheQueue() {
    let box = ThreadSafeSingleWriter(value: [String]())
    var held = box.writer
    box.writeNext { proxy in
      proxy.write.append("a")
      box.writeNext { $0.write.append("a.1") }
    }
    box.writeNext { $0.write.append("b") }
    held = nil
    #expect(box.read == ["a", "b", "a.1"])
    _ = held
  }

  @Test func insideAWriteTheWriterIsOutAndReadSeesTheWrite() {
    let box = ThreadSafeSingleWriter(value: 0)
    let checks = Log()
    box.writeNext { proxy in
      proxy.write = 5
      checks.append("\(box.writer == nil) \(box.read) \(box.tryWrite { $0 = 9 } == nil)")
    }
    #expect(checks.all == ["true 5 true"])
  }

  @Test func tryWriteAndWithWriterMutateInPlaceAndReturn() {
    let box = ThreadSafeSingleWriter(value: CopyCounted())
    #expect(box.tryWrite { $0.append(1) } != nil)
    let count = box.withWriter { value -> Int in
      value.append(2)
      return value.storage.items.count
    }
    #expect(count == 2)
    let proxy = box.writer!
    proxy.write.append(3)
    #expect(proxy.write.copies == 0)
  }

  @Test func aThrowingClosureWriteEndsTheCheckout() {
    struct Failure: Error {}
    let box = ThreadSafeSingleWriter(value: 1)
    #expect(throws: Failure.self) {
      try box.withWriter { value in
        value = 2
        throw Failure()
      }
    }
    #expect(box.read == 2)
    #expect(box.writer != nil)
  }

  @Test func oneMillionQueuedWritesDrainInOrder() {
    let count = 1_000_000
    let box = ThreadSafeSingleWriter(value: [Int]())
    box.tryWrite { $0.reserveCapacity(count) }
    var held = box.writer
    for index in 0..<count { box.writeNext { $0.write.append(index) } }
    held = nil
    #expect(box.read.elementsEqual(0..<count))
    _ = held
  }

  @Test func containerAndProxiesAreFreedWhenNobodyHoldsThem() async {
    weak var weakBox: ThreadSafeSingleWriter<Int>?
    weak var weakProxy: ThreadSafeWriterProxy<Int>?
    let released = DispatchSemaphore(value: 0)
    do {
      let box = ThreadSafeSingleWriter(value: 0)
      weakBox = box
      box.writeNext { $0.write += 1 }
      let proxy = box.writer!
      weakProxy = proxy
      box.writeNext { $0.write += 1 }
      DispatchQueue.global().async {
        proxy.write += 1
        released.signal()
      }
    }
    released.wait()
    await waitUntil { weakBox == nil }
    #expect(weakProxy == nil)
    #expect(weakBox == nil)
  }

  // MARK: Across threads

  @Test func readsDoNotWaitForAHeldCheckout() {
    let box = ThreadSafeSingleWriter(value: Pair())
    let proxy = box.writer!
    proxy.write.bump()
    let done = DispatchSemaphore(value: 0)
    let seen = Locked(Pair())
    DispatchQueue.global().async {
      let value = box.read
      seen.withLock { $0 = value }
      done.signal()
    }
    #expect(done.wait(timeout: .now() + 30) == .success, "read waited for the checkout")
    #expect(seen.withLock { $0 } == Pair(a: 1, b: 1))
    withExtendedLifetime(proxy) {}
  }

  @Test func aProxyReleasedOnAnotherThreadRunsTheQueueThere() {
    let box = ThreadSafeSingleWriter(value: [String]())
    let held = Locked(box.writer)
    box.writeNext { $0.write.append("queued") }
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      held.withLock { proxy in
        proxy?.write.append("from the other thread")
        proxy = nil  // the queued write runs here, on this thread
      }
      done.signal()
    }
    done.wait()
    #expect(box.read == ["from the other thread", "queued"])
    #expect(box.writer != nil)
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
      while !box.lock.word.hasParked { usleep(100) }
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

  @Test func withWriterWaitsItsTurnBehindQueuedWrites() {
    let box = ThreadSafeSingleWriter(value: [String]())
    var held = box.writer
    box.writeNext { $0.write.append("first") }
    let finished = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      box.withWriter { $0.append("withWriter") }
      finished.signal()
    }
    while box.pendingCount < 2 { Thread.sleep(forTimeInterval: 0.001) }
    box.writeNext { $0.write.append("last") }
    held = nil
    finished.wait()
    while box.writer == nil { Thread.sleep(forTimeInterval: 0.001) }
    #expect(box.read == ["first", "withWriter", "last"])
    _ = held
  }

  @Test(arguments: [2, 4, 8])
  func stress(threads: Int) {
    let box = ThreadSafeSingleWriter(value: Pair())
    let tally = Tally()
    let torn = Locked(0)
    let group = DispatchGroup()
    let iterations = 600
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      var rng = SplitMix(seed: UInt64(thread))
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

  // MARK: Misuse stops with a message

  @Test func withWriterInsideAWriteStopsInsteadOfDeadlocking() async {
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      box.writeNext { _ in box.withWriter { $0 += 1 } }
    }
  }

  @Test func withWriterInsideTryWriteStopsInsteadOfDeadlocking() async {
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      box.tryWrite { _ in box.withWriter { $0 += 1 } }
    }
  }

  @Test func withWriterBehindAProxyFromTheSameThreadWarns() async throws {
    let result = try await #require(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
      let box = ThreadSafeSingleWriter(value: 0)
      let held = Locked(box.writer)
      // Another thread lets go after the warning is due, so the wait does end.
      Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 1.5)
        held.withLock { $0 = nil }
      }
      box.withWriter { $0 += 1 }
      precondition(box.read == 1)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains("this is a deadlock"))
  }

  @Test func readInsideAClosureWriteStopsInsteadOfDeadlocking() async {
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      box.tryWrite { $0 = box.read + 1 }
    }
  }

  @Test func anIdleProxyReachedThroughUnmanagedStopsWithTheStaleMessage() async {
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      let escaped = Locked<Unmanaged<ThreadSafeWriterProxy<Int>>?>(nil)
      box.writeNext { proxy in escaped.withLock { $0 = Unmanaged.passUnretained(proxy) } }
      escaped.withLock { $0 }!.takeUnretainedValue().write = 1
    }
  }

  // MARK: Proxies that outlive their closure (issue 13, item 1)

  @Test func aWeakReferenceToALentProxyNeverReachesALaterCheckout() {
    let box = ThreadSafeSingleWriter(value: 0)
    let escaped = WeakProxy()
    box.writeNext { escaped.proxy = $0 }
    #expect(escaped.proxy == nil, "the retired proxy was freed")
    let held = box.writer!
    #expect(escaped.proxy == nil)
    let lent = Locked<ObjectIdentifier?>(nil)
    let nested = WeakProxy()
    box.writeNext { proxy in lent.withLock { $0 = ObjectIdentifier(proxy) } }
    box.writeNext { nested.proxy = $0 }
    _ = held
    #expect(box.read == 0)
  }

  @Test func aProxyKeptWeaklyByOneQueuedWriteIsNotTheNextOnesProxy() {
    let box = ThreadSafeSingleWriter(value: [Int]())
    let escaped = WeakProxy2()
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

  @Test func aWeakReferenceTurnedStrongOnAnotherThreadNeverWritesIntoALaterCheckout() async throws {
    // A thread keeps upgrading a weak reference to lent proxies while the lender decides
    // whether they were kept; before the fix, its writes landed inside the next checkout,
    // or in a freed container. Now they stop the program with the stale-proxy message,
    // or land in the proxy's own checkout, and never in another's.
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let escaped = WeakProxy()
      let stop = Locked(false)
      Thread.detachNewThread {
        while !stop.withLock({ $0 }) {
          if let proxy = escaped.proxy { proxy.write &+= 1_000_000 }
        }
      }
      let end = DispatchTime.now().uptimeNanoseconds + 3_000_000_000
      while DispatchTime.now().uptimeNanoseconds < end {
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
            FileHandle.standardError.write(Data("LANDED inside another checkout\n".utf8))
            exit(3)
          }
          mine.withLock { $0 = nil }
        }
      }
      FileHandle.standardError.write(Data("no stale access trapped in time\n".utf8))
      exit(2)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(!standardError.contains("LANDED"))
    #expect(
      standardError.contains("checkout has ended")
        || standardError.contains("no stale access trapped in time"))
  }

  @Test func aTryWriteWhileOnlyReadersHoldTheValueWaitsForThemInsteadOfFailing() {
    let box = ThreadSafeSingleWriter(value: [String](repeating: "x", count: 64))
    let stop = Locked(false)
    let readers = DispatchGroup()
    for _ in 0..<2 {
      readers.enter()
      Thread.detachNewThread {
        while !stop.withLock({ $0 }) { _ = box.read }
        readers.leave()
      }
    }
    var failed = 0
    for _ in 0..<20_000 where box.tryWrite({ $0[0] = "y" }) == nil { failed += 1 }
    stop.withLock { $0 = true }
    readers.wait()
    #expect(failed == 0, "nil means the writer is busy, and nobody held it")
  }

  // MARK: writeNext bodies hold the value only per access (issue 13, item 2)

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
        outcome.withLock { $0 = helper.wait(timeout: .now() + 10) }
        proxy.write += 1
      }
      finished.signal()
    }
    #expect(finished.wait(timeout: .now() + 20) == .success)
    #expect(outcome.withLock { $0 } == .success, "the helper thread was never blocked")
    #expect(box.read == 3)
  }

  // MARK: Draining never recurses (issue 13, item 4)

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

  // MARK: Waiting that could never end warns

  @Test func withWriterBehindAProxyKeptByAWriteNextOnTheSameThreadWarns() async throws {
    let result = try await #require(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
      let box = ThreadSafeSingleWriter(value: 0)
      let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
      box.writeNext { proxy in kept.withLock { $0 = proxy } }
      Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 1.5)
        kept.withLock { $0 = nil }
      }
      box.withWriter { $0 += 1 }
      precondition(box.read == 1)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains("this is a deadlock"))
  }

  @Test func withWriterInsideWithWriterSaysSoInItsMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let box = ThreadSafeSingleWriter(value: 0)
      box.withWriter { _ in box.withWriter { $0 += 1 } }
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains("withWriter inside a write's closure"))
    #expect(!standardError.contains("Release the proxy"))
  }

  @Test func anObserverOfAClosureWriteCanWriteBack() {
    // Closure writes publish after they release the writer, so the handler finds it free.
    let box = ThreadSafeSingleWriter(value: 0)
    withObservationTracking {
      _ = box.trackedRead
    } onChange: {
      box.withWriter { $0 += 100 }
    }
    box.withWriter { $0 += 1 }
    #expect(box.read == 101)
  }

  @Test func withWriterInsideAnObserverCalledAsAProxysCheckoutEndsStopsWithAMessage() async throws {
    // A released proxy publishes while its thread still holds the checkout (it may run
    // queued writes next): waiting for the writer there stops with a message, not a hang.
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let box = ThreadSafeSingleWriter(value: 0)
      withObservationTracking {
        _ = box.trackedRead
      } onChange: {
        box.withWriter { $0 += 100 }
      }
      var held = box.writer
      held?.write += 1
      held = nil
      _ = held
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains("inside an observer"))
  }

  @Test func readInsideTryWriteSaysSoInItsMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let box = ThreadSafeSingleWriter(value: 0)
      box.tryWrite { $0 = box.read + 1 }
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains("read inside a write on the same thread"))
  }

  // MARK: Contention

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

  @Test func aWaiterBehindABusyThreadIsServedWithinItsTurn() {
    // One thread takes the writer back-to-back; another must still get in. Without a
    // hand-off for long waiters, barging could keep it out indefinitely.
    let box = ThreadSafeSingleWriter(value: 0)
    let stop = Locked(false)
    let busy = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      while !stop.withLock({ $0 }) {
        box.withWriter { value in
          value += 1
          for _ in 0..<1_000 { value = value &+ 0 }
        }
      }
      busy.signal()
    }
    var served = 0
    for _ in 0..<200 {
      box.withWriter { _ in served += 1 }
    }
    stop.withLock { $0 = true }
    busy.wait()
    #expect(served == 200)
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

  @Test func theThreadThatEndsACheckoutIsNotKeptServingOthersForever() {
    // Producers keep queueing while this thread ends a checkout: past about a millisecond
    // of serving their writes, a helper thread takes the queue over and this one returns.
    let box = ThreadSafeSingleWriter(value: 0)
    let stop = Locked(false)
    let queued = Counter()
    let producers = DispatchGroup()
    var held = box.writer
    for _ in 0..<2 {
      producers.enter()
      Thread.detachNewThread {
        // At most 5 s, so that without the hand-off this test fails instead of hanging.
        let end = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        while !stop.withLock({ $0 }), DispatchTime.now().uptimeNanoseconds < end {
          box.writeNext { $0.write += 1 }
          queued.add(1)
        }
        producers.leave()
      }
    }
    while queued.load() < 1_000 { Thread.sleep(forTimeInterval: 0.001) }
    let started = DispatchTime.now().uptimeNanoseconds
    held = nil  // this thread now serves the queue, for a while
    let releaseTook = DispatchTime.now().uptimeNanoseconds - started
    Thread.sleep(forTimeInterval: 0.5)  // the producers are still at it
    let stillProducing = !stop.withLock { $0 }
    stop.withLock { $0 = true }
    producers.wait()
    box.withWriter { _ in }
    #expect(stillProducing)
    // It runs the backlog queued before it (slow in chaos mode), then hands off.
    #expect(releaseTook < 2_000_000_000, "the release returned while producers kept going")
    #expect(box.read == queued.load(), "no queued write lost")
    _ = held
  }

  // MARK: The priority gate (issue 21)

  /// Polls `condition` for up to 20 s; false if it never held. A watchdog, not a timing:
  /// each condition here comes true within a few milliseconds when the code is right.
  func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<200_000 where !condition() { usleep(100) }
    return condition()
  }

  /// Which thread holds the gate, seen from inside a write.
  func gateHolder(_ box: ThreadSafeSingleWriter<Int>) -> UInt {
    sw_uptr_load(box.lock.gateThread)
  }

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

  // MARK: Every write done when every call has returned (issue 21)

  @Test func aReleaseReturnsOnlyAfterTheWritesItQueuedAndTheirNestedOnesRunInTheEnd() {
    // Another thread keeps queueing while this one serves for over a millisecond: the
    // serving role may move on, but only after the write this thread queued has run. The
    // nested write that one queues runs on borrowed time: once the producer stops, it has
    // run too. (A release that owed it could never return behind a chain of them under a
    // stream: see Promises.md, "A release pays its debts".)
    let box = ThreadSafeSingleWriter(value: [String]())
    let stop = Locked(false)
    let producing = DispatchSemaphore(value: 0)
    var held = box.writer
    box.writeNext { proxy in
      proxy.write.append("outer")
      Thread.sleep(forTimeInterval: 0.003)  // past the server's millisecond
      box.writeNext { $0.write.append("nested") }
    }
    let produced = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      producing.signal()
      while !stop.withLock({ $0 }) { box.writeNext { $0.write.append("other") } }
      produced.signal()
    }
    producing.wait()
    held = nil  // this thread serves: "outer", then others' writes for a millisecond
    let outerRan = box.read.contains("outer")
    stop.withLock { $0 = true }
    #expect(outerRan, "the release returned before the write it queued had run")
    produced.wait()  // every call has returned: the nested write has run
    #expect(box.read.contains("nested"))
    _ = held
  }

  @Test func everyWriteHasRunWhenTheReleaseAndTheProducerHaveReturned() {
    // Slow writes keep arriving from another thread while this one serves: whoever serves
    // them past this thread's millisecond must be a caller that has not returned yet.
    let box = ThreadSafeSingleWriter(value: 0)
    let stop = Locked(false)
    let produced = Counter()
    let finished = DispatchSemaphore(value: 0)
    var held = box.writer
    Thread.detachNewThread {
      while !stop.withLock({ $0 }) {
        box.writeNext { proxy in
          let until = DispatchTime.now().uptimeNanoseconds + 20_000
          while DispatchTime.now().uptimeNanoseconds < until {}
          proxy.write += 1
        }
        produced.add(1)
      }
      finished.signal()
    }
    while produced.load() < 100 { usleep(100) }
    held = nil  // this thread serves the backlog, then the producer's stream, for a while
    usleep(20_000)
    stop.withLock { $0 = true }
    finished.wait()
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

  @Test func aDeinitThatWaitsForTheContainerWhileItsQueueRunsStops() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      do {
        let last = CallsBack(box)
        box.writeNext { [last] proxy in withExtendedLifetime(last) { proxy.write += 1 } }
      }
      // Freed by the thread that runs the queue, after the closure ran: a wait there for
      // the checkout that thread holds would never end.
      held = nil
      _ = held
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains("would wait forever"))
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

  @Test func waitsOfEveryKindMixedOnTheCooperativePoolNeverDeadlock() async {
    // An `await write` queued behind a held writer, then `withWriter` from as many tasks
    // as the pool has threads, then the release: the queue must not hand the writer to
    // the suspended task, which would need a pool thread that every `withWriter` blocks.
    await #expect(processExitsWith: .success) {
      Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 20)
        print("deadlocked")
        exit(1)
      }
      let box = ThreadSafeSingleWriter(value: 0)
      let threads = ProcessInfo.processInfo.activeProcessorCount
      for round in 0..<20 {
        let held = Locked(box.writer)
        let queued = Task { await box.write { $0 += 1 } }
        let checkout = Task { () -> Int in
          let proxy = try await box.checkout()
          proxy.write += 1
          return proxy.write
        }
        await waitUntil { box.pendingCount >= 2 || round % 2 == 1 }
        let blocked = (0..<threads).map { _ in Task { box.withWriter { $0 += 1 } } }
        usleep(10_000)  // let them block
        held.withLock { $0 = nil }
        for task in blocked { await task.value }
        await queued.value
        _ = try await checkout.value
      }
      precondition(box.read == 20 * (threads + 2))
    }
  }

  @Test func asyncWritesFromManyTasksAreExactAndInFIFOOrderPerTask() async throws {
    let box = ThreadSafeSingleWriter(value: [Int: [Int]]())
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<8 {
        group.addTask {
          for index in 0..<2_000 { await box.write { $0[task, default: []].append(index) } }
        }
      }
      try await group.waitForAll()
    }
    let result = box.read
    for task in 0..<8 { #expect(result[task] == Array(0..<2_000)) }
  }

  @Test func aCheckoutWokenAtItsTurnTakesTheWriterWithoutBeingHandedIt() async throws {
    let box = ThreadSafeSingleWriter(value: [String]())
    let held = Locked(box.writer)
    let checkout = Task { () -> Void in
      let proxy = try await box.checkout()
      proxy.write.append("checkout")
    }
    await waitUntil { box.pendingCount == 1 }
    box.writeNext { $0.write.append("after") }
    held.withLock { $0 = nil }
    try await checkout.value
    await waitUntil { box.writer != nil }
    #expect(box.read.count == 2)
    #expect(Set(box.read) == ["checkout", "after"])
  }

  @Test func cancellationRacingTheGrantNeitherHangsNorLosesAWrite() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let ran = Counter()
    for round in 0..<50 {
      let held = Locked(box.writer)
      let tasks = (0..<8).map { _ in
        Task { () -> Bool in
          do {
            try await box.writeUnlessCancelled { $0 += 1 }
            ran.add(1)
            return true
          } catch { return false }
        }
      }
      // Cancel some while the release hands the checkout out.
      for (index, task) in tasks.enumerated() where (index + round) % 3 == 0 { task.cancel() }
      held.withLock { $0 = nil }
      var succeeded = 0
      for task in tasks where await task.value { succeeded += 1 }
      _ = succeeded
    }
    await waitUntil { box.writer != nil }
    #expect(box.read == ran.load())
  }
}

/// Calls back into its container from its `deinit`.
final class CallsBack: Sendable {
  let box: ThreadSafeSingleWriter<Int>
  init(_ box: ThreadSafeSingleWriter<Int>) { self.box = box }
  deinit { box.withWriter { $0 += 1 } }
}

/// A weak reference a `@Sendable` closure can fill in, from the queue's thread.
final class WeakProxy2: @unchecked Sendable {
  // Sendable: touched only by queued writes, which run one at a time.
  weak var proxy: ThreadSafeWriterProxy<[Int]>?
}

/// A weak reference a `@Sendable` closure can fill in.
final class WeakProxy: @unchecked Sendable {
  // Sendable: used on one thread only; writeNext runs the closure inline there.
  weak var proxy: ThreadSafeWriterProxy<Int>?
}

/// A small deterministic random generator, so a failing stress run can be replayed.
struct SplitMix {
  var state: UInt64
  init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// Polls `condition` until it holds (for releases that finish on another thread).
func waitUntil(_ condition: () -> Bool) async {
  while !condition() { try? await Task.sleep(for: .milliseconds(1)) }
}

@Suite struct ThreadSafeSingleWriterConcurrencyTests {
  @Test func asyncWriteMutatesInPlaceAndReturns() async throws {
    let box = ThreadSafeSingleWriter(value: 41)
    let result = await box.write { value -> Int in
      value += 1
      return value
    }
    #expect(result == 42)
    #expect(box.writer != nil)
  }

  @Test func asyncWriteTakesItsFIFOPlaceAmongQueuedWrites() async throws {
    let box = ThreadSafeSingleWriter(value: [String]())
    let held = Locked(box.writer)
    box.writeNext { $0.write.append("first") }
    let task = Task { await box.write { $0.append("async") } }
    await waitUntil { box.pendingCount == 2 }
    box.writeNext { $0.write.append("last") }
    held.withLock { $0 = nil }
    await task.value
    await waitUntil { box.writer != nil }
    #expect(box.read == ["first", "async", "last"])
  }

  @Test func aCancelledWriteUnlessCancelledLeavesTheQueueAndThrows() async {
    let box = ThreadSafeSingleWriter(value: [String]())
    let held = Locked(box.writer)
    box.writeNext { $0.write.append("before") }
    let task = Task { try await box.writeUnlessCancelled { $0.append("cancelled") } }
    await waitUntil { box.pendingCount == 2 }
    box.writeNext { $0.write.append("after") }
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(box.pendingCount == 2)
    held.withLock { $0 = nil }
    #expect(box.read == ["before", "after"])
    #expect(box.writer != nil)
  }

  @Test func awaitWriteWaitsItsTurnWhateverTheCancellation() async {
    let box = ThreadSafeSingleWriter(value: [String]())
    let held = Locked(box.writer)
    let task = Task { await box.write { $0.append("counted") } }
    await waitUntil { box.pendingCount == 1 }
    task.cancel()
    held.withLock { $0 = nil }
    await task.value
    await waitUntil { box.writer != nil }
    #expect(box.read == ["counted"], "a cancelled request still counts its write")
    let already = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      await box.write { $0.append("already cancelled") }
    }
    await already.value
    #expect(box.read == ["counted", "already cancelled"])
  }

  @Test func anAlreadyCancelledTaskDoesNotQueue() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let held = Locked(box.writer)
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await box.writeUnlessCancelled { $0 += 1 }
    }
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(box.pendingCount == 0)
    held.withLock { $0 = nil }
    #expect(box.read == 0)
  }

  @Test func asyncCheckoutWaitsForTheWriter() async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    let held = Locked(box.writer)
    let task = Task { () async throws -> Int in
      let proxy = try await box.checkout()
      proxy.write += 10
      #expect(box.writer == nil)
      return proxy.write
    }
    await waitUntil { box.pendingCount == 1 }
    held.withLock { $0?.write = 5 }
    held.withLock { $0 = nil }
    #expect(try await task.value == 15)
    await waitUntil { box.writer != nil }
  }

  @Test func awaitWriteBehindThisTasksOwnCheckoutWarns() async throws {
    let result = try await #require(
      processExitsWith: .success, observing: [\.standardErrorContent]
    ) {
      let box = ThreadSafeSingleWriter(value: 0)
      let held = Locked<ThreadSafeWriterProxy<Int>?>(try await box.checkout())
      // Another thread lets go after the warning is due, so the wait does end.
      Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 1.5)
        held.withLock { $0 = nil }
      }
      await box.write { $0 += 1 }
      precondition(box.read == 1)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains("If this task still holds that proxy, this is a deadlock"))
  }

  @Test func aCancelledCheckoutThrowsWithoutCheckingOut() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let held = Locked(box.writer)
    let task = Task { try await box.checkout() }
    await waitUntil { box.pendingCount == 1 }
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    held.withLock { $0 = nil }
    #expect(box.writer != nil)
  }

  @Test func aFastConsumerSeesEveryReleaseInOrder() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let seen = Locked([Int]())
    let consumer = Task {
      for await value in box.changes() {
        seen.withLock { $0.append(value) }
        if value == 4 { break }
      }
    }
    await waitUntil { seen.withLock { $0 } == [0] }
    box.tryWrite { $0 = 1 }
    await waitUntil { seen.withLock { $0.count } == 2 }
    box.writer!.write = 2  // a checkout through a proxy, released at once
    await waitUntil { seen.withLock { $0.count } == 3 }
    box.writeNext { $0.write = 3 }
    await waitUntil { seen.withLock { $0.count } == 4 }
    await box.write { $0 = 4 }
    await consumer.value
    #expect(seen.withLock { $0 } == [0, 1, 2, 3, 4])
  }

  @Test func aSlowConsumerGetsTheNewestValue() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let stream = box.changes()
    for value in 1...100 { box.tryWrite { $0 = value } }
    var iterator = stream.makeAsyncIterator()
    #expect(await iterator.next() == 100)
  }

  @Test func aConsumerCanWriteBack() async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    let consumer = Task {
      for await value in box.changes() {
        if value >= 3 { break }
        await box.write { $0 += 1 }
      }
    }
    await consumer.value
    #expect(box.read == 3)
  }

  @Test func anAbandonedStreamUnsubscribes() async {
    let box = ThreadSafeSingleWriter(value: 0)
    do {
      let stream = box.changes()
      #expect(box.subscriberCount == 1)
      _ = stream
    }
    await waitUntil { box.subscriberCount == 0 }
    #expect(box.subscriberCount == 0)
  }

  @Test func theStreamEndsWhenTheContainerIsFreed() async {
    weak var weakBox: ThreadSafeSingleWriter<Int>?
    var stream: ThreadSafeSingleWriter<Int>.Changes<Int>?
    do {
      let box = ThreadSafeSingleWriter(value: 7)
      weakBox = box
      stream = box.changes()
    }
    #expect(weakBox == nil, "a stream does not keep its container alive")
    var values: [Int] = []
    for await value in stream! { values.append(value) }
    #expect(values.isEmpty, "an iterator made after the container is gone ends at once")
  }
}

// MARK: - Hostile tests

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

@Suite(.serialized) struct ThreadSafeSingleWriterHostileTests {
  // MARK: writeNext never waits (Promises.md): serving hand-over

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

  // MARK: No wait inside a write (Promises.md): a deinit after a kept proxy was handed back

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

  // MARK: No wait inside a write (Promises.md): a queued await write's body calls back

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

  // MARK: No loss, Cancellation (Promises.md): cancellation racing the server

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

  // MARK: A woken checkout claims (Promises.md): under a stream of writeNext

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

  // MARK: An await never blocks (Promises.md): checkout held, withWriter on every pool thread

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

  // MARK: Quiescence, FIFO (Promises.md): many producers, nested writes, waits

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

  // MARK: Whole reads (Promises.md): non-POD values

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

  // MARK: One writer, No loss (Promises.md): debug invariants under everything at once

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

extension ThreadSafeSingleWriterHostileTests {
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

extension ThreadSafeSingleWriterHostileTests {
  // MARK: Fair to withWriter (Promises.md): the same stream starves neither wait

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

  // MARK: Writers not starved by readers (Promises.md)

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

  // MARK: Quiescence (Promises.md): a successor dismissed at a hand-off to a waiter

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

// MARK: - Hostile tests of the priority gate

// Hostile tests for the priority gate. Anything that could hang
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

/// In a stress test's child, once every call has returned: stops the child unless the
/// value is `value`, nothing is queued and the gate is free.
func preconditionSettled(
  _ box: ThreadSafeSingleWriter<Int>, value: Int, _ context: String = ""
) {
  precondition(box.read == value, "\(context)value \(box.read), not \(value)")
  precondition(box.pendingCount == 0, "\(context)still queued")
  if let failure = gateIdleFailure(box) { preconditionFailure(context + failure) }
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

  // MARK: The gate, No wait inside a write (Promises.md): never sleep on one's own gate

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

  // MARK: The gate, No loss, An await never blocks (Promises.md): under load

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
      preconditionSettled(box, value: expected.count)
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
      preconditionSettled(box, value: 4 * perThread)
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
      preconditionSettled(box, value: expected.count)
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
        preconditionSettled(box, value: ran.count + 2 * (round + 1), "round \(round): ")
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

// MARK: - Self-deadlock marks

/// The self-deadlock checks and the marks behind them (`checkoutThread`, `writingThread`,
/// `gateThread`, `checkoutTask`): misuse stops with a message, and legal programs leave
/// no mark behind.
@Suite struct ThreadSafeSingleWriterMarkTests {
  @Test func withWriterBehindThisTasksOwnCheckoutWarns() async throws {
    // The warning names `checkout()` among the proxies it catches, but `checkout()` marks
    // `checkoutThread` 0, so a task that blocks its thread in withWriter hangs silently.
    let result = try await #require(
      processExitsWith: .failure, observing: [\.exitStatus, \.standardErrorContent]
    ) {
      attackWatchdog(3, "withWriter behind this task's checkout()")
      let box = ThreadSafeSingleWriter(value: 0)
      let proxy = try await box.checkout()
      proxy.write += 1
      box.withWriter { $0 += 1 }
      exit(7)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(standardError.contains("this is a deadlock"), "no warning: \(standardError)")
  }
  @Test func awaitWriteBehindThisTasksOwnWriterProxyWarns() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.exitStatus, \.standardErrorContent]
    ) {
      attackWatchdog(3, "await write behind this task's writer proxy")
      let box = ThreadSafeSingleWriter(value: 0)
      let proxy = box.writer!
      proxy.write += 1
      await box.write { $0 += 1 }
      exit(7)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(
      standardError.lowercased().contains("this is a deadlock"), "no warning: \(standardError)")
  }
  @Test func withWriterInsideReadOnTheSameThreadStopsWithAMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.exitStatus, \.standardErrorContent]
    ) {
      attackWatchdog(3, "withWriter inside read { }")
      let box = ThreadSafeSingleWriter(value: 0)
      box.read { _ in box.withWriter { $0 += 1 } }
      exit(7)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(!standardError.contains("WATCHDOG"), "hung silently: \(standardError)")
    #expect(standardError.contains("ThreadSafeSingleWriter:"))
  }

  @Test func tryWriteInsideReadOnTheSameThreadStopsWithAMessage() async throws {
    // tryWrite "returns nil if the writer is not free"; with only readers present it takes
    // the checkout and waits for them, here for its own thread's reader slot.
    let result = try await #require(
      processExitsWith: .failure, observing: [\.exitStatus, \.standardErrorContent]
    ) {
      attackWatchdog(3, "tryWrite inside read { }")
      let box = ThreadSafeSingleWriter(value: 0)
      box.read { _ in _ = box.tryWrite { $0 += 1 } }
      exit(7)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(!standardError.contains("WATCHDOG"), "hung silently: \(standardError)")
    #expect(standardError.contains("ThreadSafeSingleWriter:"))
  }

  @Test func aProxyWriteInsideReadOnTheSameThreadStopsWithAMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.exitStatus, \.standardErrorContent]
    ) {
      attackWatchdog(3, "proxy write inside read { }")
      let box = ThreadSafeSingleWriter(value: 0)
      let proxy = box.writer!
      box.read { _ in proxy.write += 1 }
      exit(7)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(!standardError.contains("WATCHDOG"), "hung silently: \(standardError)")
    #expect(standardError.contains("ThreadSafeSingleWriter:"))
  }

  @Test func awaitWriteAfterSendingTheCheckoutToAnotherTaskDoesNotCallItADeadlock()
    async throws
  {
    // The documented pattern: check out, send the proxy to a detached task. The task that
    // checked out then waits its turn, which comes when the detached task ends (2 s).
    let result = try await #require(
      processExitsWith: .failure, observing: [\.exitStatus, \.standardErrorContent]
    ) {
      attackWatchdog(10, "await write behind a proxy sent away")
      let box = ThreadSafeSingleWriter(value: 0)
      var proxy: ThreadSafeWriterProxy<Int>? = try await box.checkout()
      Task.detached { [proxy] in
        try? await Task.sleep(nanoseconds: 2_000_000_000)
        proxy!.write += 1
      }
      proxy = nil
      await box.write { $0 += 10 }
      precondition(box.read == 11)
      exit(7)
    }
    let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(result.exitStatus == .exitCode(7), "\(standardError)")
    #expect(
      !standardError.contains("This is a deadlock"),
      "the warning asserts a deadlock it cannot know of: \(standardError)")
  }

  @Test func marksAreClearAfterKeptProxiesWaitersAndSuccessorsSettle() async throws {
    for round in 0..<150 {
      weak var weakBox: ThreadSafeSingleWriter<Int>?
      let expected: Int
      do {
        let box = ThreadSafeSingleWriter(value: 0)
        weakBox = box
        let group = DispatchGroup()
        var held = box.writer
        // Kept proxies, released on another thread, on the serving thread, or inside the
        // deinit of a captured object; closure writes that wait; a run over 1 ms.
        DispatchQueue.global().async(group: group) {
          box.writeNext { proxy in
            // A thread of its own: on 2 cores, pool threads blocked in withWriter behind
            // this proxy would keep a pool block that releases it from running.
            group.enter()
            let kept = Locked<ThreadSafeWriterProxy<Int>?>(proxy)
            Thread.detachNewThread {
              attackSpin(UInt64(round % 5) * 300_000)
              kept.withLock {
                $0?.write += 1
                $0 = nil  // released before the group hears of it
              }
              group.leave()
            }
          }
        }
        DispatchQueue.global().async(group: group) {
          let keeper = HoldsProxyThenQueues(box)
          box.writeNext { proxy in
            keeper.proxy = proxy
            proxy.write += 1
          }
        }
        DispatchQueue.global().async(group: group) {
          for _ in 0..<50 { box.writeNext { $0.write += 1 } }
        }
        DispatchQueue.global().async(group: group) {
          box.writeNext { proxy in
            proxy.write += 1
            attackSpin(1_500_000)
          }
          box.withWriter { $0 += 1 }
        }
        DispatchQueue.global().async(group: group) {
          box.writeNext { $0.write += 1 }
          box.withWriter { $0 += 1 }
          _ = box.tryWrite { $0 += 1 }
        }
        attackSpin(UInt64(round % 3) * 200_000)
        held = nil
        _ = held
        group.wait()
        // A block lets go of what it captured just after it leaves the group: give a
        // checkout still ending a second. A mark left behind stays for good.
        let settled = attackNow() + 1_000_000_000
        while box.lock.word.isCheckedOut, attackNow() < settled { usleep(100) }
        expected = box.read
        #expect(sw_uptr_load(box.lock.checkoutThread) == 0, "round \(round)")
        #expect(sw_uptr_load(box.lock.writingThread) == 0, "round \(round)")
        #expect(sw_uptr_load(box.lock.gateThread) == 0, "round \(round)")
        #expect(sw_uptr_load(box.lock.checkoutTask) == 0, "round \(round)")
        #expect(!box.lock.word.isCheckedOut, "round \(round)")
      }
      #expect(expected >= 156, "round \(round)")
      // Blocks and threads let go of what they captured just after they signal the group.
      let end = attackNow() + 1_000_000_000
      while weakBox != nil, attackNow() < end { usleep(100) }
      #expect(weakBox == nil, "round \(round): the container outlived its calls")
    }
  }

  @Test func marksAreClearAfterCancelledCheckoutsAndQueuedAsyncWrites() async throws {
    for round in 0..<100 {
      let box = ThreadSafeSingleWriter(value: 0)
      var held = box.writer
      let writes = (0..<4).map { _ in Task { await box.write { $0 += 1 } } }
      let checkouts = (0..<3).map { _ in
        Task { () -> Bool in
          guard let proxy = try? await box.checkout() else { return false }
          proxy.write += 100
          return true
        }
      }
      try? await Task.sleep(nanoseconds: 200_000)
      if round % 2 == 0 { checkouts[1].cancel() }
      held = nil
      _ = held
      for write in writes { await write.value }
      var taken = 0
      for checkout in checkouts where await checkout.value { taken += 1 }
      #expect(box.read == 4 + 100 * taken, "round \(round)")
      #expect(sw_uptr_load(box.lock.checkoutThread) == 0, "round \(round)")
      #expect(sw_uptr_load(box.lock.writingThread) == 0, "round \(round)")
      #expect(sw_uptr_load(box.lock.gateThread) == 0, "round \(round)")
      #expect(sw_uptr_load(box.lock.checkoutTask) == 0, "round \(round)")
    }
  }
}
