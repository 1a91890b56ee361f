import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// An observed checkout whose accesses are over ends in one step, as an observed closure
/// write does (`endObservedCheckout`), and publishes after its release: an in-place
/// `writeNext` and a proxy, racing a queued write, another checkout and subscribers.
extension ScheduleScenarioTests {
  /// A `changes()` subscription observes the container throughout, and another comes and
  /// goes. Thread A's `writeNext` calls run in place when the writer is free and end at
  /// once; B's queues behind them or runs in place; C checks the writer out and writes
  /// through the proxy, or queues if it is busy. Every write runs once, every checkout
  /// that wrote publishes once, so the version moves by the number of writes, and the
  /// one-step end is refused whenever something waits (the queue is then served).
  @Test func anObservedInPlaceWriteNextEndsAtOnce() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.wordEndObservedCheckout, .handOffArriveSettingQueued, .wordTakeDirty]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let kept = container.changes()
      let start = container.publishedVersion
      return Scheduler.Run(
        threads: [
          {
            Self.queue(container, journal, "A.1")
            Self.queue(container, journal, "A.2")
          },
          { Self.queue(container, journal, "B.1") },
          {
            if let writer = container.writer {
              Self.write(writer, journal, "C.1")
            } else {
              Self.queue(container, journal, "C.1")
            }
          },
          {
            let changes = container.changes()
            withExtendedLifetime(changes) { sw_yield_thread() }
          },
        ],
        check: {
          withExtendedLifetime(kept) {}
          if let failure = journal.check(ranExactly: ["A.1", "A.2", "B.1", "C.1"]) {
            return failure
          }
          if let failure = Self.isFreeAndEmpty(container) { return failure }
          if container.read != 4 { return "value \(container.read), not 4" }
          if container.lock.word.isDirty { return "dirty after every checkout ended" }
          let published = container.publishedVersion &- start
          return published == 4 ? nil : "\(published) publications for 4 writes"
        })
    }
  }

  /// No subscription until one arrives during the writes and leaves again: an in-place
  /// `writeNext` that began unobserved and ends observed, or the other way round, ends at
  /// once with `observed` as it is at its end, never leaving `dirty` or `observed` behind.
  @Test func anInPlaceWriteNextEndsAtOnceAsASubscriberComesAndGoes() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.wordObserve, .wordUnobserve, .wordEndObservedCheckout, .wordEndCheckout]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      return Scheduler.Run(
        threads: [
          {
            Self.queue(container, journal, "A.1")
            Self.queue(container, journal, "A.2")
          },
          {
            let changes = container.changes()
            withExtendedLifetime(changes) { sw_yield_thread() }
          },
        ],
        check: {
          if container.isObserved { return "still observed after the subscription ended" }
          if container.lock.word.isDirty { return "dirty with nobody observing" }
          return Self.finalCheck(container, journal, ran: ["A.1", "A.2"])
        })
    }
  }
}
