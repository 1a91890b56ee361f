import Dispatch
import Foundation
import Observation
import Testing

@testable import SingleWriter

extension ThreadSafeSingleWriterTests {
  // MARK: No wait inside a write (Promises.md): misuse stops with a message

  @Test func withWriterInsideAWriteStopsInsteadOfDeadlocking() async {
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      box.writeNext { _ in box.withWriter { $0 += 1 } }
    }
  }

  @Test func withWriterInsideTryWriteStopsInsteadOfDeadlocking() async {
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      _ = box.tryWrite { _ in box.withWriter { $0 += 1 } }
    }
  }

  @Test func withWriterInsideWithWriterSaysSoInItsMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let box = ThreadSafeSingleWriter(value: 0)
      box.withWriter { _ in box.withWriter { $0 += 1 } }
    }
    expectStop(result, saying: "withWriter inside a write's closure")
    #expect(!standardError(result).contains("Release the proxy"))
  }

  @Test func readInsideAClosureWriteStopsInsteadOfDeadlocking() async {
    await #expect(processExitsWith: .failure) {
      let box = ThreadSafeSingleWriter(value: 0)
      _ = box.tryWrite { $0 = box.read + 1 }
    }
  }

  @Test func readInsideTryWriteSaysSoInItsMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let box = ThreadSafeSingleWriter(value: 0)
      _ = box.tryWrite { $0 = box.read + 1 }
    }
    expectStop(result, saying: "read inside a write on the same thread")
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

  @Test func anObserverOfAProxysCheckoutEndCanWriteBack() {
    // With nothing queued, a checkout's end publishes after it releases the writer, as a
    // closure write does, so the handler finds it free.
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
    #expect(box.read == 101)
  }

  @Test func withWriterInsideAnObserverCalledAsAProxysCheckoutEndsStopsWithAMessage() async {
    // A released proxy with writes queued behind it publishes while its thread still holds
    // the checkout (it runs them next): waiting for the writer there stops with a message,
    // not a hang.
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let box = ThreadSafeSingleWriter(value: 0)
      withObservationTracking {
        _ = box.trackedRead
      } onChange: {
        box.withWriter { $0 += 100 }
      }
      var held = box.writer
      held?.write += 1
      box.writeNext { $0.write += 10 }
      held = nil
      _ = held
    }
    expectStop(result, saying: "inside an observer")
  }

  @Test func aDeinitThatWaitsForTheContainerWhileItsQueueRunsStops() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let box = ThreadSafeSingleWriter(value: 0)
      // Freed by the thread that runs the queue, after the closure ran: a wait there for
      // the checkout that thread holds would never end.
      serveQueued(box) {
        let last = CallsBack(box)
        box.writeNext { [last] proxy in withExtendedLifetime(last) { proxy.write += 1 } }
        precondition(box.queuedWrites == 1, "the write did not queue: the checkout was not held")
      }
      attackErr("returned, value \(box.read)\n")
      exit(1)
    }
    expectStop(result, saying: "would wait forever")
  }
}

extension ThreadSafeSingleWriterHostileTests {
  // MARK: No wait inside a write (Promises.md): a deinit after a hand-back, a queued body

  /// A queued write keeps its proxy in an object that only its closure holds. When the
  /// closure is freed on the serving thread, the object's deinit drops the proxy (the
  /// checkout is handed back to the run on this thread) and then calls `withWriter`.
  /// The docs: "a deinit there that waits for the same container stops with a message
  /// instead of hanging".
  @Test func aDeinitThatDropsAKeptProxyThenWaitsStopsInsteadOfHanging() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "deinit after hand-back")
      let box = ThreadSafeSingleWriter(value: 0)
      serveQueued(box) {
        let holder = HoldsProxyThenCallsBack(box)
        box.writeNext { [holder] proxy in holder.proxy = proxy }
        precondition(box.queuedWrites == 1, "the write did not queue: the checkout was not held")
      }
      attackErr("returned, value \(box.read)\n")
      exit(1)
    }
    expectStop(result, saying: "would wait forever")
  }

  /// The same hand-back, with a writeNext instead: the run goes on and runs it.
  @Test func aDeinitThatDropsAKeptProxyThenQueuesRunsItsWrite() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "deinit after hand-back, queueing")
      let box = ThreadSafeSingleWriter(value: 0)
      serveQueued(box) {
        let holder = HoldsProxyThenCallsBack(box, queueing: true)
        box.writeNext { [holder] proxy in
          proxy.write += 1
          holder.proxy = proxy
        }
        box.writeNext { $0.write += 10 }
      }
      precondition(box.read == 111, "value \(box.read)")
      precondition(box.writer != nil, "writer still out")
    }
    expectExit(result, 0)
  }

  @Test func withWriterInsideAQueuedAsyncBodyStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "withWriter in a queued async body")
      let box = ThreadSafeSingleWriter(value: 0)
      let held = Locked(box.writer)
      let task = Task {
        await box.write { v in
          box.withWriter { $0 += 1 }
          v += 1
        }
      }
      precondition(eventually { box.pendingCount >= 1 })
      held.withLock { $0 = nil }  // this thread runs the body
      blockUntilDone(task)
    }
    expectStop(result, saying: "would wait forever")
  }

  @Test func readInsideAQueuedAsyncBodyStopsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(5, "read in a queued async body")
      let box = ThreadSafeSingleWriter(value: "a")
      let held = Locked(box.writer)
      let task = Task { await box.write { v in v += box.read } }
      precondition(eventually { box.pendingCount >= 1 })
      held.withLock { $0 = nil }
      blockUntilDone(task)
    }
    expectStop(result, saying: "would wait forever")
  }
}
