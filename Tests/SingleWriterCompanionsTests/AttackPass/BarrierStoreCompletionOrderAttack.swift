import Foundation
import SingleWriterCompanions
import Testing

// BarrierStore's documented completion order: `init(backing:completionQueue:)` says of
// `completionQueue`, "pass a serial queue to get them one at a time, in the order the
// operations took effect". With the default `.readWriteLock` backing, the callback forms
// run the operation under the lock on the caller's thread, and must queue the completion
// before the lock is dropped: queued after, another thread's later operation could queue
// its completion first.
//
// One thread sets 1, 2, 3, ... for one key; another reads that key with the callback form.
// A read that returned `n` took effect after the set of `n`; on a serial completion queue
// its completion must therefore come after that set's completion.

/// The child: a setter thread and a reader thread, then the completion log checked.
func atkCompletionCompletionOrder(queue: Bool) -> Never {
  attackWatchdog(60, "completion order")
  let completions = DispatchQueue(label: "atkCompletion.completions")
  // Touched only on `completions`, which is serial.
  nonisolated(unsafe) var log: [(isSet: Bool, value: Int)] = []
  let store = BarrierStore<Int, Int>(
    backing: queue ? .barrierQueue : .readWriteLock, completionQueue: completions)
  let rounds = 5_000
  // Every completion leaves the group: the barrier queue's come after the calls return.
  let completed = DispatchGroup()
  let setterDone = DispatchSemaphore(value: 0)
  let readerDone = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    for value in 1...rounds {
      completed.enter()
      store.setValue(value, forKey: 0) { _, value in
        log.append((true, value))
        completed.leave()
      }
    }
    setterDone.signal()
  }
  Thread.detachNewThread {
    for _ in 0..<rounds {
      completed.enter()
      store.value(forKey: 0) { _, value in
        if let value { log.append((false, value)) }
        completed.leave()
      }
    }
    readerDone.signal()
  }
  setterDone.wait()
  readerDone.wait()
  completed.wait()  // every call has entered by now
  completions.sync {}
  var lastSetCompleted = 0
  var inversions = 0
  var first = ""
  for entry in log {
    if entry.isSet {
      lastSetCompleted = max(lastSetCompleted, entry.value)
    } else if entry.value > lastSetCompleted {
      inversions += 1
      if first.isEmpty {
        first =
          "the completion of a read that returned \(entry.value) came before the "
          + "completion of the set of \(entry.value) (last set completed before it: "
          + "\(lastSetCompleted))"
      }
    }
  }
  attackErr(
    "\(queue ? "barrierQueue" : "readWriteLock"): \(inversions) inversions in \(log.count) completions\n"
  )
  atkEnd(breakingIf: inversions > 0, first)
}

@Suite struct AttackPassBarrierStoreCompletionOrder {
  @Test func callbackCompletionsOnASerialQueueComeInTheOrderTheOperationsTookEffect() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      atkCompletionCompletionOrder(queue: false)
    }
    atkDiag(result)
    #expect(!standardError(result).contains("BREAK"), "\(exitReport(result))")
  }

  /// The control: the barrier queue enqueues each completion from the block that ran the
  /// operation, so a later barrier write waits for it.
  @Test func callbackCompletionsOfTheBarrierQueueComeInTheOrderTheOperationsTookEffect() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      atkCompletionCompletionOrder(queue: true)
    }
    atkDiag(result)
    #expect(!standardError(result).contains("BREAK"), "\(exitReport(result))")
  }
}
