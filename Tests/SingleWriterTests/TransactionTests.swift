import Dispatch
import Foundation
import Observation
import Testing

@testable import SingleWriter

/// What a transaction's body throws in these tests.
struct Abandon: Error, Equatable {}

/// Runs `body` on a thread of its own; the flag is set once it has returned.
func onOwnThread(_ body: @escaping @Sendable () -> Void) -> SharedFlag {
  let done = SharedFlag()
  Thread.detachNewThread {
    body()
    done.set()
  }
  return done
}

/// A value read on the main actor by the main-actor caller's test.
@MainActor var mainActorSteps: [String] = []

/// `transaction`: the body works on its own copy; readers see the value from before until
/// it returns, then all of it at once; a throw publishes nothing; queued writes run after.
@Suite struct TransactionTests {
  // MARK: Sync, thread-safe

  @Test func commitsWhatTheBodyWroteAndReturnsItsResult() {
    let box = ThreadSafeSingleWriter(value: Pair())
    let result = box.transaction { pair -> Int in
      pair.a = 1
      pair.b = 1
      return pair.a + pair.b
    }
    #expect(result == 2)
    #expect(box.read == Pair(a: 1, b: 1))
    box.transaction { $0.bump() }  // the trailing-closure form, Void
    #expect(box.read == Pair(a: 2, b: 2))
  }

  @Test func aReadInsideTheBodySeesTheValueFromBefore() {
    let box = ThreadSafeSingleWriter(value: Pair())
    box.transaction { pair in
      pair.a = 5
      #expect(box.read == Pair(), "read sees the value from before")
      #expect(box.read { $0.a } == 0, "read { } too")
      pair.b = 5
      #expect(box.read == Pair())
    }
    #expect(box.read == Pair(a: 5, b: 5))
  }

  @Test func aThrowUndoesEverythingAndPropagatesTheTypedError() {
    let box = ThreadSafeSingleWriter(value: Pair(a: 1, b: 1))
    let before = box.hub.version
    #expect(throws: Abandon()) {
      try box.transaction { (pair: inout Pair) throws(Abandon) in
        pair.a = 9
        throw Abandon()
      }
    }
    // The error is typed: no cast needed.
    do throws(Abandon) {
      try box.transaction { (pair: inout Pair) throws(Abandon) in
        pair.b = 9
        throw Abandon()
      }
    } catch {
      #expect(error == Abandon())
    }
    #expect(box.read == Pair(a: 1, b: 1))
    #expect(box.hub.version == before, "nothing published")
    #expect(box.writer != nil, "the writer is free again")
  }

  @Test func onePublicationPerCommitAndNoneForAThrow() async {
    let box = ThreadSafeSingleWriter(value: Pair())
    var iterator = box.changes(skippingRepeats: false).makeAsyncIterator()
    #expect(await iterator.next() == Pair())
    let before = box.hub.version
    box.transaction { pair in
      for _ in 0..<100 { pair.bump() }
    }
    #expect(box.hub.version == before &+ 1, "one publication for 100 writes")
    _ = try? box.transaction { (pair: inout Pair) throws(Abandon) in
      pair.a = -1
      throw Abandon()
    }
    #expect(box.hub.version == before &+ 1, "none for a throw")
    #expect(await iterator.next() == Pair(a: 100, b: 100))
    box.withWriter { $0.a = 7 }
    // The next element is the next write's: the throw gave the stream nothing.
    #expect(await iterator.next() == Pair(a: 7, b: 100))
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func trackingFiresOncePerCommitAndNotForAThrow() {
    let box = ThreadSafeSingleWriter(value: Pair())
    let fired = Counter()
    trackForever(fired) { _ = box.trackedRead }
    box.transaction { pair in
      pair.bump()
      pair.bump()
      #expect(fired.load() == 0, "not before the commit")
    }
    #expect(fired.load() == 1)
    _ = try? box.transaction { (pair: inout Pair) throws(Abandon) in
      pair.bump()
      throw Abandon()
    }
    #expect(fired.load() == 1)
    let plain = SingleWriter(value: 0)
    nonisolated(unsafe) let unsafePlain = plain  // the closure runs on this thread only
    let plainFired = Counter()
    trackForever(plainFired) { _ = unsafePlain.trackedRead }
    _ = plain.transaction { value in
      value += 1
      value += 1
    }
    #expect(plainFired.load() == 1)
  }

  @Test func aWriteNextFromTheBodyRunsAfterTheCommitAndSeesIt() {
    let box = ThreadSafeSingleWriter(value: Pair())
    box.transaction { pair in
      box.writeNext { $0.write.a *= 10 }
      #expect(box.tryWrite({ _ in }) == nil, "the writer is the transaction's")
      #expect(box.writer == nil)
      pair.a = 3
    }
    #expect(box.read.a == 30)
  }

  @Test func writesQueuedFromOtherThreadsRunAfterTheCommitInOrder() async {
    let box = ThreadSafeSingleWriter(value: [String]())
    let waited = DispatchSemaphore(value: 0)
    let inBody = SharedFlag()
    // Blocking calls on threads of their own: the cooperative pool may have two threads.
    let body = onOwnThread {
      box.transaction { log in
        inBody.set()
        log.append("transaction")
        waited.wait()  // until the three writes below wait behind it
        log.append("commit")
      }
    }
    // Not `box.writer == nil`, which takes the writer when it is free: a transaction that
    // found it taken slept, and asked the next closure write to take the priority gate. It
    // then held the gate for its whole body, and `withWriter` below slept on the gate
    // instead of queueing.
    await waitUntil { inBody.isSet }
    writeNextFromAnotherThread(box) { $0.write.append("writeNext") }
    let asyncWrite = Task.detached { await box.write { $0.append("await write") } }
    await waitUntil { box.queuedWrites == 2 }
    let blocked = onOwnThread { box.withWriter { $0.append("withWriter") } }
    // A blocked withWriter queues once overtaken for about a millisecond.
    await waitUntil { box.queuedWrites == 3 }
    #expect(box.read == [], "readers see the value from before the transaction")
    waited.signal()
    await waitUntil { body.isSet && blocked.isSet }
    await asyncWrite.value
    #expect(box.read == ["transaction", "commit", "writeNext", "await write", "withWriter"])
  }

  @Test func aTransactionWaitsItsTurnBehindAHeldProxy() async {
    let box = ThreadSafeSingleWriter(value: Pair())
    var proxy = box.writer
    proxy!.write.a = 1
    let copied = Locked<Pair?>(nil)
    let done = onOwnThread {
      box.transaction { pair in
        copied.withLock { $0 = pair }
        pair.a += 1
        pair.b += 1
      }
    }
    await waitUntil { box.queuedWrites == 1 }
    proxy!.write.b = 1
    proxy = nil  // released here: its end serves the queue
    await waitUntil { done.isSet }
    #expect(copied.withLock { $0 } == Pair(a: 1, b: 1), "the proxy's writes are in its copy")
    #expect(box.read == Pair(a: 2, b: 2))
  }

  @Test func theCommitMovesTheCopyIn() {
    // One copy of the buffer, made by the body's first write; the commit copies nothing:
    // the value's buffer is the one the body wrote.
    let box = ThreadSafeSingleWriter(value: [Int](repeating: 0, count: 1_000))
    var written: UnsafeRawPointer?
    box.transaction { array in
      array[0] = 1
      written = array.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }
    let now = box.read { $0.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }
    #expect(now == written)
  }

  // MARK: Async, thread-safe

  @Test func anAsyncTransactionHoldsAcrossAwaitsWhileReadersReadTheOldValue() async throws {
    let box = ThreadSafeSingleWriter(value: Pair())
    let halfway = SharedFlag()
    let resume = SharedFlag()
    let refresh = Task.detached {
      try await box.transaction { pair in
        pair.a = 1
        await Task.yield()
        halfway.set()
        await waitUntil { resume.isSet }
        pair.b = 1
        return pair
      }
    }
    await waitUntil { halfway.isSet }
    #expect(box.read == Pair(), "readers keep the old value across the body's awaits")
    #expect(box.read { $0 } == Pair())
    #expect(box.writer == nil, "and every other writer is kept out")
    resume.set()
    #expect(try await refresh.value == Pair(a: 1, b: 1))
    #expect(box.read == Pair(a: 1, b: 1))
  }

  @Test func anAsyncTransactionThrowsAndUndoes() async {
    let box = ThreadSafeSingleWriter(value: Pair())
    let before = box.hub.version
    await #expect(throws: Abandon.self) {
      try await box.transaction { pair in
        pair.a = 1
        await Task.yield()
        throw Abandon()
      }
    }
    #expect(box.read == Pair())
    #expect(box.hub.version == before)
    #expect(box.writer != nil)
  }

  @Test func anAsyncTransactionWaitsItsTurnAndQueuedWritesSeeItsCommit() async throws {
    let box = ThreadSafeSingleWriter(value: [String]())
    var proxy = box.writer
    let transaction = Task.detached {
      try await box.transaction { log in
        log.append("transaction")
        await Task.yield()
        log.append("commit")
      }
    }
    await waitUntil { box.queuedWrites == 1 }
    box.writeNext { $0.write.append("writeNext") }
    proxy!.write.append("proxy")
    proxy = nil  // released here: its end serves the queue
    try await transaction.value
    await box.drained()
    #expect(box.read == ["proxy", "transaction", "commit", "writeNext"])
  }

  @Test func aTaskCancelledBeforeTheCallThrowsWithoutRunningTheBody() async {
    let box = ThreadSafeSingleWriter(value: 0)
    let ran = SharedFlag()
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await box.transaction { value in
        ran.set()
        await Task.yield()  // a body that awaits: the async form
        value = 1
      }
    }
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(!ran.isSet)
    #expect(box.read == 0)
  }

  @Test func aTaskCancelledWhileItWaitsThrowsWithoutRunningTheBody() async {
    let box = ThreadSafeSingleWriter(value: 0)
    // Kept in a box, not a variable: an optimized build may free a proxy after its last use.
    let held = Locked(box.writer)
    #expect(held.withLock { $0 } != nil)
    let ran = SharedFlag()
    let task = Task.detached {
      try await box.transaction { value in
        ran.set()
        await Task.yield()  // a body that awaits: the async form
        value = 1
      }
    }
    await waitUntil { box.queuedWrites == 1 }
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    held.withLock { $0 = nil }  // released: its end serves the queue
    await box.drained()
    #expect(!ran.isSet)
    #expect(box.read == 0)
    #expect(box.writer != nil)
  }

  @Test func cancellationOnceTheBodyRunsIsTheBodysBusiness() async throws {
    let box = ThreadSafeSingleWriter(value: 0)
    let started = SharedFlag()
    let cancelled = SharedFlag()
    let task = Task.detached {
      try await box.transaction { value in
        started.set()
        while !cancelled.isSet { await Task.yield() }
        value = Task.isCancelled ? 1 : 2
      }
    }
    await waitUntil { started.isSet }
    task.cancel()
    cancelled.set()
    try await task.value
    #expect(box.read == 1, "the body saw the cancellation, and its commit stands")
  }

  @MainActor
  @Test func aMainActorCallerRunsTheBodyOnTheMainActor() async throws {
    mainActorSteps = []
    let box = ThreadSafeSingleWriter(value: 0)
    let total = try await box.transaction { value -> Int in
      MainActor.assertIsolated()
      mainActorSteps.append("before")
      await Task.yield()
      MainActor.assertIsolated()
      value += 1
      mainActorSteps.append("after")
      return value
    }
    #expect(total == 1)
    #expect(mainActorSteps == ["before", "after"])
    // The sync form from the main actor: a plain call, no await.
    let doubled: Int = box.transaction(fileID: #fileID, function: #function, line: #line) {
      value in
      value *= 2
      return value
    }
    #expect(doubled == 2)
  }

  @Test func theContainerLivesUntilTheTransactionEndsThenGoes() async throws {
    var box: ThreadSafeSingleWriter<Pair>? = ThreadSafeSingleWriter(value: Pair())
    weak let gone = box
    var iterator = box!.changes().makeAsyncIterator()
    #expect(await iterator.next() == Pair())
    box!.transaction { pair in
      box = nil  // the call itself keeps the container alive
      pair.bump()
    }
    #expect(gone == nil, "freed once the transaction returned")
    var rest: [Pair] = []
    while let value = await iterator.next() { rest.append(value) }
    #expect(
      rest.allSatisfy { $0 == Pair(a: 1, b: 1) }, "the stream saw only the commit, then ended")

    var asyncBox: ThreadSafeSingleWriter<Int>? = ThreadSafeSingleWriter(value: 0)
    weak let asyncGone = asyncBox
    try await asyncBox!.transaction { value in
      asyncBox = nil
      await Task.yield()
      value = 1
    }
    #expect(asyncGone == nil)
  }

  // MARK: SingleWriter

  @Test func plainTransactionCommitsOrIsNilWhenTheWriterIsOut() {
    let box = SingleWriter(value: Pair())
    let result = box.transaction { pair -> Int in
      pair.a = 1
      #expect(box.read == Pair(), "a read inside sees the value from before")
      pair.b = 1
      return 42
    }
    #expect(result == 42)
    #expect(box.read == Pair(a: 1, b: 1))
    let proxy = box.writer!
    let ran = SharedFlag()
    #expect(box.transaction { _ in ran.set() } == nil)
    withExtendedLifetime(proxy) {}
    #expect(!ran.isSet)
  }

  @Test func plainTransactionThrowsAndUndoes() {
    let box = SingleWriter(value: Pair())
    _ = box.changes()  // observed: publications counted
    let before = box.hub!.version
    #expect(throws: Abandon()) {
      try box.transaction { (pair: inout Pair) throws(Abandon) in
        pair.a = 1
        throw Abandon()
      }
    }
    #expect(box.read == Pair())
    #expect(box.hub!.version == before)
    #expect(box.writer != nil)
  }

  @Test func plainTransactionPublishesOnceAndQueuedWritesSeeIt() async {
    let box = SingleWriter(value: Pair())
    var iterator = box.changes(skippingRepeats: false).makeAsyncIterator()
    #expect(await iterator.next() == Pair())
    let before = box.hub!.version
    _ = box.transaction { pair in
      box.writeNext { $0.write.b *= 10 }
      #expect(box.tryWrite({ _ in }) == nil)
      #expect(box.transaction({ _ in }) == nil, "nested: the writer is out")
      pair.a = 1
      pair.b = 2
    }
    #expect(box.read == Pair(a: 1, b: 20))
    // The commit and the queued write each published; nobody looked between them, so
    // one collection covers both, and the consumer gets the value they left.
    #expect(box.hub!.version == before &+ 1)
    #expect(await iterator.next() == Pair(a: 1, b: 20))
  }
}
