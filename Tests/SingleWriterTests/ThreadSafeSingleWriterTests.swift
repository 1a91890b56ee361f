import Dispatch
import Foundation
import Testing

@testable import SingleWriter

// The tests of `ThreadSafeSingleWriter`, in five suites spread over one file per promise
// (the promises are named in Docs/PromiseCatalog.md, which names the test that checks each):
//
// - ThreadSafeSingleWriterTests.swift: the core rules, as for `SingleWriter`;
// - ThreadSafeContentionTests.swift: One writer, No loss, Fair to withWriter;
// - ThreadSafeProxyLifetimeTests.swift: Stale proxies stop, proxies that outlive their
//   closure;
// - ThreadSafeNoWaitInsideAWriteTests.swift: No wait inside a write;
// - ThreadSafeMarkTests.swift: True warnings and the self-deadlock marks;
// - ThreadSafeQuiescenceTests.swift: Quiescence, A release pays its debts, Serving is
//   bounded, writeNext never waits;
// - ThreadSafeConcurrencyTests.swift: await write, checkout() and changes(): An await
//   never blocks, FIFO, A checkout is handed over, Newest, Streams end;
// - ThreadSafeCancellationTests.swift: Cancellation;
// - ThreadSafeReadTests.swift: Whole reads, Writers not starved by readers;
// - ThreadSafeGateTests.swift and ThreadSafeGateStressTests.swift: The gate.
//
// Their helpers are in Support.swift. Tests that must run in real time are tagged
// `.realTime` (`SINGLEWRITER_SKIP_REAL_TIME=1 swift test` leaves them out); the others
// wait for states, not for time.

/// Behaviour through the public API, each in the process of the test runner.
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
    _ = box.tryWrite { $0.reserveCapacity(count) }
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

  @Test func withWriterWaitsItsTurnBehindQueuedWrites() {
    let box = ThreadSafeSingleWriter(value: [String]())
    var held = box.writer
    box.writeNext { $0.write.append("first") }
    let finished = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      box.withWriter { $0.append("withWriter") }
      finished.signal()
    }
    #expect(eventually { box.pendingCount >= 2 }, "the withWriter never queued")
    box.writeNext { $0.write.append("last") }
    held = nil
    finished.wait()
    #expect(eventually { box.writer != nil })
    #expect(box.read == ["first", "withWriter", "last"])
    _ = held
  }
}

/// Hostile tests: interleavings two cores rarely produce, forced or provoked under load.
/// Anything that could hang runs in a child process with `attackWatchdog`. Serialized, so
/// that these loads do not run beside each other.
@Suite(.serialized) struct ThreadSafeSingleWriterHostileTests {}
