import Dispatch
import Foundation
import SingleWriter
import SingleWriterCompanions
import Testing

/// A key that runs a hook in `hash(into:)`, which the store calls while it holds shared
/// or exclusive access: a way to stop a thread inside an operation.
private struct ProbeKey: Hashable, Sendable {
  let id: Int
  let onHash: (@Sendable () -> Void)?

  init(_ id: Int, onHash: (@Sendable () -> Void)? = nil) {
    self.id = id
    self.onHash = onHash
  }

  static func == (lhs: ProbeKey, rhs: ProbeKey) -> Bool { lhs.id == rhs.id }

  func hash(into hasher: inout Hasher) {
    onHash?()
    hasher.combine(id)
  }
}

/// A value whose `deinit` reads the store that held it.
private final class Tenant: Sendable {
  let onDeinit: @Sendable () -> Void
  init(onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
  deinit { onDeinit() }
}

/// A flag that threads can share.
private final class Flag: Sendable {
  private let value = Locked(false)
  var isSet: Bool { value.withLock { $0 } }
  func set(_ newValue: Bool = true) { value.withLock { $0 = newValue } }
}

private let backings: [BarrierStoreBacking] = [.barrierQueue, .readWriteLock]

/// Overwrites and removes values in every form; each displaced value's `deinit` reads the
/// store, which stops the program if it runs while the store is locked or on its queue.
private func displaceValuesWhoseDeinitUsesTheStore(_ backing: BarrierStoreBacking) async {
  let store = BarrierStore<Int, Tenant>(backing: backing)
  let tenant = { @Sendable in Tenant { _ = store.value(forKey: 0) } }
  store.setValue(tenant(), forKey: 1)
  store.setValue(tenant(), forKey: 1)
  store.removeValue(forKey: 1)
  await store.setValueAsync(tenant(), forKey: 1)
  await store.setValueAsync(tenant(), forKey: 1)
  await store.removeValueAsync(forKey: 1)
  await withCheckedContinuation { continuation in
    store.setValue(tenant(), forKey: 1) { _, _ in }
    store.setValue(tenant(), forKey: 1) { _, _ in }
    store.removeValue(forKey: 1) { _, _ in continuation.resume() }
  }
}

@Suite struct BarrierStoreTests {
  @Test func theDefaultBackingIsTheLock() {
    #expect(BarrierStore<String, Int>().backing == .readWriteLock)
    #expect(BarrierStore<String, Int>(backing: .barrierQueue).backing == .barrierQueue)
  }

  @Test(arguments: backings)
  func syncForms(_ backing: BarrierStoreBacking) {
    let store = BarrierStore<String, Int>(backing: backing)
    #expect(store.value(forKey: "a") == nil)
    store.setValue(1, forKey: "a")
    store.setValue(2, forKey: "b")
    #expect(store.value(forKey: "a") == 1)
    store.setValue(3, forKey: "a")
    #expect(store.value(forKey: "a") == 3)
    #expect(store.removeValue(forKey: "a") == 3)
    #expect(store.removeValue(forKey: "a") == nil)
    #expect(store.value(forKey: "a") == nil)
    #expect(store.value(forKey: "b") == 2)
  }

  @Test(arguments: backings)
  func asyncForms(_ backing: BarrierStoreBacking) async {
    let store = BarrierStore<String, Int>(backing: backing)
    #expect(await store.valueAsync(forKey: "a") == nil)
    await store.setValueAsync(1, forKey: "a")
    #expect(await store.valueAsync(forKey: "a") == 1)
    await store.setValueAsync(2, forKey: "a")
    #expect(store.value(forKey: "a") == 2)
    #expect(await store.removeValueAsync(forKey: "a") == 2)
    #expect(await store.removeValueAsync(forKey: "a") == nil)
    #expect(await store.valueAsync(forKey: "a") == nil)
  }

  @Test(arguments: backings)
  func callbackFormsReportKeyAndValueOnTheCompletionQueue(_ backing: BarrierStoreBacking) async {
    let completions = DispatchQueue(label: "test.completions")
    let marker = DispatchSpecificKey<String>()
    completions.setSpecific(key: marker, value: "completions")
    let store = BarrierStore<String, Int>(backing: backing, completionQueue: completions)

    // The completion queue is serial, so the log comes back in call order.
    let log = await withCheckedContinuation { continuation in
      let log = Locked<[String]>([])
      @Sendable func record(_ entry: String) {
        let queue = DispatchQueue.getSpecific(key: marker) ?? "another queue"
        log.withLock { $0.append("\(entry) on \(queue)") }
      }
      store.setValue(1, forKey: "a") { key, value in record("set \(key) \(value)") }
      store.value(forKey: "a") { key, value in record("get \(key) \(String(describing: value))") }
      store.setValue(2, forKey: "a") { key, value in record("set \(key) \(value)") }
      store.removeValue(forKey: "a") { key, value in
        record("remove \(key) \(String(describing: value))")
      }
      store.removeValue(forKey: "a") { key, value in
        record("remove \(key) \(String(describing: value))")
      }
      store.value(forKey: "a") { key, value in
        record("get \(key) \(String(describing: value))")
        continuation.resume(returning: log.withLock { $0 })
      }
    }
    #expect(
      log == [
        "set a 1 on completions", "get a Optional(1) on completions",
        "set a 2 on completions", "remove a Optional(2) on completions",
        "remove a nil on completions", "get a nil on completions",
      ])
  }

  @Test(arguments: backings)
  func aWriteStartedBeforeAReadIsSeenByIt(_ backing: BarrierStoreBacking) async {
    let store = BarrierStore<Int, Int>(backing: backing)
    var missed = 0
    for key in 0..<300 {
      store.setValue(key, forKey: key) { _, _ in }
      if store.value(forKey: key) != key { missed += 1 }
      store.removeValue(forKey: key) { _, _ in }
      if await store.valueAsync(forKey: key) != nil { missed += 1 }
      store.setValue(key, forKey: key) { _, _ in }
      let seen = await withCheckedContinuation { continuation in
        store.value(forKey: key) { continuation.resume(returning: $1) }
      }
      if seen != key { missed += 1 }
    }
    #expect(missed == 0)
  }

  @Test(arguments: backings)
  func readersRunSideBySide(_ backing: BarrierStoreBacking) async {
    let store = BarrierStore<ProbeKey, Int>(backing: backing)
    store.setValue(7, forKey: ProbeKey(1))
    // Each reader waits, inside its read, for the other to be inside its own. If reads
    // excluded each other, the first would time out instead of meeting the second.
    let inside = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
    @Sendable func read(_ me: Int) -> (met: Bool, value: Int?) {
      let met = Flag()
      let value = store.value(
        forKey: ProbeKey(1) {
          inside[me].signal()
          met.set(inside[1 - me].wait(timeout: .now() + 60) == .success)
        })
      return (met.isSet, value)
    }
    async let first = runOnThread(stackSize: 1 << 20) { read(0) }
    async let second = runOnThread(stackSize: 1 << 20) { read(1) }
    let results = await [first, second]
    #expect(results.map(\.met) == [true, true])
    #expect(results.map(\.value) == [7, 7])
  }

  @Test(arguments: backings)
  func aWriteWaitsForAReadInProgress(_ backing: BarrierStoreBacking) async {
    let store = BarrierStore<ProbeKey, Int>(backing: backing)
    store.setValue(1, forKey: ProbeKey(1))
    let go = DispatchSemaphore(value: 0)
    let writing = DispatchSemaphore(value: 0)
    let written = Flag()
    Thread {
      go.wait()
      writing.signal()
      store.setValue(2, forKey: ProbeKey(1))
      written.set()
    }.start()
    // The read lets the writer go from inside, and gives it time to finish if it could.
    let (value, writtenDuringRead) = await runOnThread(stackSize: 1 << 20) {
      let writtenDuringRead = Flag()
      let value = store.value(
        forKey: ProbeKey(1) {
          go.signal()
          writing.wait()
          usleep(20_000)  // widens the window for a broken store; correctness needs none
          writtenDuringRead.set(written.isSet)
        })
      return (value, writtenDuringRead.isSet)
    }
    #expect(value == 1)
    #expect(!writtenDuringRead)
    while !written.isSet { await Task.yield() }
    #expect(store.value(forKey: ProbeKey(1)) == 2)
  }

  @Test(arguments: backings)
  func readersThatKeepTheStoreBusyDoNotStarveAWrite(_ backing: BarrierStoreBacking) {
    // Three threads read in a relay: a read stays inside (its key is hashing) until a
    // later read has come in, or for 20 ms at most, so the latest reader always holds the
    // store. A lock that lets new readers join while a writer waits (glibc's default
    // `pthread_rwlock_t`) then never lets the write in: before the fix it still waited
    // after 20 s. A fair store holds new reads back, and the write waits for the reads
    // inside, 20 ms.
    let store = BarrierStore<ProbeKey, Int>(backing: backing)
    store.setValue(0, forKey: ProbeKey(1))
    let entered = Counter()
    let relayKey = ProbeKey(1) {
      let ticket = entered.add(1)
      let deadline = DispatchTime.now() + .milliseconds(20)
      while entered.load() == ticket, DispatchTime.now() < deadline { usleep(100) }
    }
    let stop = Flag()
    let reads = Counter()
    let readersDone = DispatchGroup()
    for _ in 0..<3 {
      readersDone.enter()
      Thread {
        while !stop.isSet {
          _ = store.value(forKey: relayKey)
          reads.add(1)
        }
        readersDone.leave()
      }.start()
    }
    while reads.load() < 30 { usleep(1_000) }  // the relay runs

    let written = DispatchSemaphore(value: 0)
    Thread {
      store.setValue(2, forKey: ProbeKey(2))
      written.signal()
    }.start()
    // Generous for a loaded 2-core machine: a fair write waits about 20 ms.
    let finished = written.wait(timeout: .now() + 60) == .success
    stop.set()
    readersDone.wait()
    if !finished { written.wait() }  // the readers stopped, so the write gets in now
    #expect(finished, "a write waited more than 10 s behind a stream of reads")
    #expect(store.value(forKey: ProbeKey(2)) == 2)
  }

  @Test(arguments: backings)
  func manyThreadsReadingAndWriting(_ backing: BarrierStoreBacking) async {
    let store = BarrierStore<Int, Int>(backing: backing)
    let threads = 4
    let perThread = 500
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
      for index in 0..<perThread {
        let key = thread * perThread + index
        store.setValue(key, forKey: key)
        store.setValue(index, forKey: -1)  // every thread writes this one
        _ = store.value(forKey: -1)
        _ = store.value(forKey: key - 1)
        if index.isMultiple(of: 3) { store.removeValue(forKey: key) }
      }
    }
    var wrong = 0
    for key in 0..<threads * perThread {
      let expected = (key % perThread).isMultiple(of: 3) ? nil : key
      if store.value(forKey: key) != expected { wrong += 1 }
    }
    #expect(wrong == 0)
    #expect(await store.valueAsync(forKey: -1) == perThread - 1)
  }

  @Test func displacedValuesAreReleasedOutsideTheQueue() async {
    await #expect(processExitsWith: .success) {
      await displaceValuesWhoseDeinitUsesTheStore(.barrierQueue)
    }
  }

  @Test func displacedValuesAreReleasedOutsideTheLock() async {
    await #expect(processExitsWith: .success) {
      await displaceValuesWhoseDeinitUsesTheStore(.readWriteLock)
    }
  }

  @Test func aSyncCallFromTheStoresOwnQueueStops() async {
    // The classic design's sync read, called from a block on the queue, would wait for
    // itself forever. Here it stops with a message.
    await #expect(processExitsWith: .failure) {
      let store = BarrierStore<ProbeKey, Int>(backing: .barrierQueue)
      store.setValue(1, forKey: ProbeKey(1) { _ = store.value(forKey: ProbeKey(2)) })
    }
  }

  @Test func aReadFromInsideAWriteWithTheLockStops() async {
    await #expect(processExitsWith: .failure) {
      let store = BarrierStore<ProbeKey, Int>(backing: .readWriteLock)
      store.setValue(1, forKey: ProbeKey(1) { _ = store.value(forKey: ProbeKey(2)) })
    }
  }

  @Test func aWriteFromInsideAWriteWithTheLockStops() async {
    await #expect(processExitsWith: .failure) {
      let store = BarrierStore<ProbeKey, Int>(backing: .readWriteLock)
      store.setValue(1, forKey: ProbeKey(1) { store.setValue(2, forKey: ProbeKey(2)) })
    }
  }
}
