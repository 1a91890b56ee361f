import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// Waiting on the word: reader slots, write accesses that wait for them, readers that wait
/// for a write access, and the wakes at their ends; a holder that queues behind its own
/// checkout; observers arriving and leaving.
extension ScheduleScenarioTests {
  /// A reader holds its slot across a scheduling point while the checkout's holder writes
  /// twice through its proxy, and a second reader reads: an access that finds a reader
  /// steps back, marks the word and sleeps until the last reader's end wakes it; a reader
  /// that finds an access keeps its slot and sleeps until the access's end wakes it
  /// (WriterLock+ProxyAccess.swift). Every schedule must finish, with both writes whole in
  /// what every reader saw.
  @Test func readersAndAWriteAccessWakeEachOther() {
    Scheduler.check(
      pct: 500, exhaustive: 2_000,
      reaches: [
        .wordBeginRead, .wordEndRead, .wordEndReadWakes, .wordMarkWaiters,
        .proxyAccessBegin, .proxyAccessStepsBack, .proxyAccessEnd, .proxyAccessEndWakes,
        .proxyAccessReaderWaits,
      ]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          { Self.readHoldingTheSlot(container, "R.1", journal) },
          {
            held.strong!.write += 1
            held.strong!.write += 1
            journal.leave()
            held.strong = nil
          },
          { Self.readHoldingTheSlot(container, "R.2", journal) },
        ],
        check: {
          if let failure = journal.check(ranExactly: ["A.0"]) { return failure }
          if let failure = Self.isFreeAndEmpty(container) { return failure }
          return container.read == 2 ? nil : "value \(container.read), not 2"
        })
    }
  }

  /// The same with closure writes, which hold the value in the state word: a closure
  /// write that finds readers takes the checkout, marks the word and sleeps until the last
  /// reader's end wakes it; a reader that finds the write sleeps until its end wakes it.
  /// These sleeps have no deadline: a wake never made is a deadlock.
  @Test func readersAndAClosureWriteWakeEachOther() {
    Scheduler.check(
      pct: 500, exhaustive: 2_000,
      reaches: [
        .wordBeginRead, .wordEndReadWakes, .wordMarkWaiters, .wordBeginAccessWaits,
        .wordEndAccessWakes,
      ]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      return Scheduler.Run(
        threads: [
          { Self.readHoldingTheSlot(container, "R.1", journal) },
          {
            container.withWriter { $0 += 1 }
            container.withWriter { $0 += 1 }
          },
          { Self.readHoldingTheSlot(container, "R.2", journal) },
        ],
        check: {
          if let note = journal.notes.first { return note }
          if let failure = Self.isFreeAndEmpty(container) { return failure }
          return container.read == 2 ? nil : "value \(container.read), not 2"
        })
    }
  }

  /// Reads through `read { }`, which takes a reader slot whatever the value, and keeps
  /// the slot across a yield, as a slow copy of a large value would; notes a value other
  /// than 0, 1 or 2: each of the two writes is whole, and a reader between them sees the
  /// first.
  static func readHoldingTheSlot(_ container: Container, _ name: String, _ journal: ScheduleJournal)
  {
    let value = container.read { value in
      sw_yield_thread()
      return value
    }
    if !(0...2).contains(value) { journal.notes.append("\(name) saw \(value)") }
  }

  /// The checkout's holder queues two writes behind its own checkout, and another thread
  /// subscribes to `changes()` and lets go: the first write sets `queued`, the second is
  /// the holder's too (what its release owes), and the subscription marks the word
  /// observed, then unobserved, while the release serves.
  @Test func aHolderQueuesBehindItselfWhileAnObserverComesAndGoes() {
    Scheduler.check(
      pct: 500, exhaustive: 2_000,
      reaches: [
        .handOffArriveSettingQueued, .handOffArriveFromTheHolder, .wordObserve, .wordUnobserve,
      ]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      return Scheduler.Run(
        threads: [
          {
            guard let writer = container.writer else {
              journal.notes.append("the writer was busy")
              return
            }
            Self.queue(container, journal, "H.1")
            Self.queue(container, journal, "H.2")
            Self.write(writer, journal, "H.0")
            // The release serves what this thread queued before it returns.
            withExtendedLifetime(writer) {}
          },
          {
            let changes = container.changes()
            withExtendedLifetime(changes) { sw_yield_thread() }
          },
        ],
        check: {
          if container.isObserved { return "still observed after the subscription ended" }
          return Self.finalCheck(container, journal, ran: ["H.0", "H.1", "H.2"])
        })
    }
  }
}
