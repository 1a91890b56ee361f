import Observation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// Transactions: a commit racing readers, an observer and a queued write.
extension ScheduleScenarioTests {
  /// A transaction adds 1, yields, and adds 1 again, so that only odd values are half
  /// done; a reader thread reads with `read` and `read { }` (holding its slot across a
  /// yield, as a slow copy would) around the commit; a tracking observer reads the value
  /// it is told of; and another thread queues a write of 2 that races the transaction's
  /// start and its commit. No reader or observer may see an odd value, the queued write
  /// must never run inside the transaction, and the value must end at 4.
  @Test func aCommitRacesReadersAnObserverAndAQueuedWrite() {
    guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
    Scheduler.check(
      pct: 2_000, exhaustive: 10_000, allowsTimeouts: true,
      reaches: [.wordBeginAccess, .wordTakeDirty]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      withObservationTracking {
        _ = container.trackedRead
      } onChange: {
        // Told while the commit's checkout ends: the value is whole by now.
        let value = container.read
        if value % 2 != 0 { journal.notes.append("the observer saw \(value)") }
      }
      @Sendable func check(_ value: Int, _ who: String) {
        if value % 2 != 0 || !(0...4).contains(value) {
          journal.notes.append("\(who) saw \(value), which no commit published")
        }
      }
      return Scheduler.Run(
        threads: [
          {
            container.transaction { value in
              journal.enter("T.1")
              value += 1
              sw_yield_thread()
              check(container.read, "a read inside the body")
              value += 1
              journal.leave()
            }
          },
          {
            for _ in 0..<2 {
              check(container.read, "read")
              check(
                container.read { value in
                  sw_yield_thread()
                  return value
                }, "read { }")
            }
          },
          {
            container.writeNext { proxy in
              journal.enter("Q.1")
              check(proxy.write, "the queued write")
              proxy.write += 2
              journal.leave()
            }
          },
        ],
        check: {
          if let failure = journal.check(ranExactly: ["T.1", "Q.1"]) { return failure }
          if let failure = Self.isFreeAndEmpty(container) { return failure }
          return container.read == 4 ? nil : "value \(container.read), not 4"
        })
    }
  }

  /// An async transaction queues behind a held proxy, and its body suspends halfway while
  /// it holds the writer; a reader thread reads around it and a `writeNext` races it. The
  /// release hands the checkout to the task at its turn; readers never see an odd value,
  /// the queued write never runs inside the transaction, and the value ends at 6.
  @Test func anAsyncCommitHandedTheWriterAtItsTurnRacesReadersAndAQueuedWrite() {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    Scheduler.check(pct: 300, exhaustive: 1_000, allowsTimeouts: true, reaches: [.entryCheckout]) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let tasks = Tasks()
      journal.enter("A.0")
      @Sendable func check(_ value: Int, _ who: String) {
        if value % 2 != 0 || !(0...6).contains(value) {
          journal.notes.append("\(who) saw \(value), which no commit published")
        }
      }
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 2
            journal.leave()
            held.strong = nil
          },
          {
            let executor = ScheduleExecutor()
            Task(executorPreference: executor) {
              try? await container.transaction { value in
                journal.enter("T.1")
                value += 1
                await Task.yield()
                check(container.read, "a read inside the body")
                value += 1
                journal.leave()
              }
              tasks.finished += 1
            }
            executor.run { tasks.finished == 1 }
          },
          {
            check(container.read, "read")
            container.writeNext { proxy in
              journal.enter("Q.1")
              proxy.write += 2
              journal.leave()
            }
            check(container.read { $0 }, "read { }")
          },
        ],
        check: {
          if let failure = journal.check(ranExactly: ["A.0", "T.1", "Q.1"]) { return failure }
          if let failure = Self.isFreeAndEmpty(container) { return failure }
          return container.read == 6 ? nil : "value \(container.read), not 6"
        })
    }
  }
}
