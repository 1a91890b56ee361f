import Dispatch
import Foundation
import Testing

@testable import SingleWriter

extension ThreadSafeSingleWriterConcurrencyTests {
  // MARK: Cancellation (Promises.md)

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
}

extension ThreadSafeSingleWriterTests {
  // MARK: Cancellation, No loss (Promises.md): cancellation racing the grant

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

extension ThreadSafeSingleWriterHostileTests {
  // MARK: Cancellation, No loss (Promises.md): cancellation racing the server and the wake

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
      let task = checkoutTask(box)
      await waitUntil { box.pendingCount >= 1 }  // the checkout has queued
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
      // A diagnostic for a real hang only: under load a round may take seconds, and a
      // passing run must print nothing that reads as a failure.
      let watch = Thread {
        Thread.sleep(forTimeInterval: 60)
        if taskDone.load() == 0 {
          attackErr(
            "round \(round): checkout task still waiting after 60 s; pending \(box.pendingCount), word \(box.lock.word), value \(box.read), round \(round)\n"
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
}
