import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// Serving handed on: a server past its millisecond hands the queue to the next thread
/// that queues, at the end of a batch or in the middle of a long one; a successor gives up
/// after about a millisecond, or is dismissed when the server stops for another reason.
/// Virtual time moves 10 µs per scheduling point, so that the milliseconds pass in a few
/// hundred points; jumps of the clock let a successor's deadline meet the hand-over.
extension ScheduleScenarioTests {
  /// A slow queued write makes its server late; another thread queues one write while it
  /// runs, and a second once the late batch has begun: that thread is chosen as the
  /// successor, and the batch, short, ends well within its millisecond, so the server hands
  /// it the queue, and it serves its own write. With the gate wanted, the server holds the
  /// gate while it serves and releases it before the hand-over, and the successor takes
  /// it in turn (the scheduler's gate checks that each release is by its taker). Some
  /// schedules must hand over; in others the successor withdraws, or nobody is late.
  @Test(arguments: [false, true])
  func aLateServerHandsTheQueueToItsSuccessor(gated: Bool) {
    var handedOver = 0
    Scheduler.check(
      pct: 500, exhaustive: 2_000, tick: 10_000, allowsTimeouts: true,
      reaches: [
        .handOffNextBatchLate, .handOffArriveAsSuccessor, .handOffNextBatchHandOver,
        .handOffSuccessorServes,
      ] + (gated ? [.gateClose, .gateOpen] : [])
    ) {
      let container = gated ? Self.makeGatedContainer() : Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let successor = ScheduleBox<ThreadBox>()
      let ranB2 = ScheduleBox<ThreadBox>()
      journal.enter("A.0")
      container.writeNext {
        Self.write($0, journal, "Q.1")
        Self.spin(nanoseconds: 1_200_000, yielding: true)
      }
      return Scheduler.Run(
        threads: [
          { Self.writeAndRelease(held, journal) },  // serves Q.1, then the late batch
          {
            successor.strong = ThreadBox()
            while !journal.events.contains("Q.1") { sw_yield_thread() }
            container.writeNext {
              Self.write($0, journal, "B.1")
              Self.spin(nanoseconds: 100_000, yielding: true)
            }
            while !journal.events.contains("B.1") { sw_yield_thread() }
            container.writeNext {
              Self.write($0, journal, "B.2")
              ranB2.strong = ThreadBox()
            }
          },
        ],
        check: {
          if ranB2.strong?.thread == successor.strong?.thread { handedOver += 1 }
          return Self.finalCheck(container, journal, ran: ["A.0", "Q.1", "B.1", "B.2"])
        })
    }
    #expect(handedOver > 0, "no schedule handed the queue to the successor")
  }

  /// A backlog of 66 writes is taken as one batch; past its millisecond, the server looks
  /// for a successor after every entry from the 64th on, and another thread that queues
  /// then takes the checkout, and the rest of the batch, mid-way.
  @Test func aLongBatchIsHandedOverMidway() {
    let backlog = (1...66).map { "Q.\($0)" }
    Scheduler.check(
      pct: 150, exhaustive: 300, tick: 10_000, allowsTimeouts: true,
      reaches: [.handOffMidBatchRunOn, .handOffMidBatchHandOver, .handOffSuccessorServes]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      journal.enter("A.0")
      for event in backlog {
        container.writeNext {
          Self.write($0, journal, event)
          sw_yield_thread()  // as bodies on another core would, let the other thread run
        }
      }
      return Scheduler.Run(
        threads: [
          { Self.writeAndRelease(held, journal) },
          {
            // Once the 65th entry runs, the server has looked for a successor after the
            // 64th, found none, and asked the next thread that queues to become one.
            while journal.events.count < 66 { sw_yield_thread() }
            Self.queue(container, journal, "B.1")
          },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0"] + backlog + ["B.1"]) })
    }
  }

  /// The late server's next batch holds a write it queued itself that keeps its proxy,
  /// and another thread queues while that write runs, and is chosen as the successor: the
  /// kept proxy stops the server, which dismisses the successor (it returns; its write
  /// stays queued), and a third thread's release of the kept proxy serves it.
  @Test func aKeptProxyDismissesTheSuccessor() {
    Scheduler.check(
      pct: 500, exhaustive: 2_000, tick: 10_000, allowsTimeouts: true,
      reaches: [.handOffArriveAsSuccessor, .handOffStopServingDismissesTheSuccessor]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let kept = ScheduleBox<ThreadSafeWriterProxy<Int>>()
      journal.enter("A.0")
      container.writeNext {
        Self.write($0, journal, "Q.1")
        Self.spin(nanoseconds: 1_200_000, yielding: true)
        container.writeNext { proxy in  // queued by the server: its own late batch runs it
          journal.enter("Q.2")
          proxy.write += 1
          Self.spin(nanoseconds: 100_000, yielding: true)
          kept.strong = proxy
        }
      }
      return Scheduler.Run(
        threads: [
          { Self.writeAndRelease(held, journal) },
          {
            while !journal.events.contains("Q.2") { sw_yield_thread() }
            Self.queue(container, journal, "B.1")
          },
          {
            while kept.strong == nil { sw_yield_thread() }
            journal.leave()
            kept.strong = nil
          },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "Q.1", "Q.2", "B.1"]) })
    }
  }
}

/// The thread that made it.
final class ThreadBox: Sendable {
  let thread = sw_current_thread()
}

extension ScheduleScenarioTests {
  /// `aLongBatchIsHandedOverMidway`, with the first subscriber arriving (C) as the server
  /// looks for a successor: the checkout passes mid-batch, with the mark of the entry that
  /// ran last, to the thread that takes over serving, and what is left to serve (the
  /// batch's last entry and the successor's own) only reads. A consumer that found the
  /// value half done, or read one that was not the last, sees the version move.
  @Test func anArrivalAsALongBatchIsHandedOverMidwayIsHeard() {
    let backlog = (1...66).map { "Q.\($0)" }
    Scheduler.check(
      pct: 150, exhaustive: 300, tick: 10_000, allowsTimeouts: true,
      reaches: [.handOffMidBatchHandOver, .handOffSuccessorServes, .wordObserve]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let look = ScheduleLook()
      journal.enter("A.0")
      for event in backlog {
        container.writeNext {
          if event == backlog.last {
            Self.readOnly($0, journal, event)
          } else {
            Self.write($0, journal, event)
          }
          sw_yield_thread()
        }
      }
      return Scheduler.Run(
        threads: [
          { Self.writeAndRelease(held, journal) },
          {
            while journal.events.count < 66 { sw_yield_thread() }
            container.writeNext { Self.readOnly($0, journal, "B.1") }
          },
          {
            while journal.events.count < 66 { sw_yield_thread() }
            container.subscriptionArrived()
            look.version = container.publishedVersion
            switch container.readWhole({ $0 }) {
            case .value(let value): look.value = value
            case .halfDone: look.halfDone += 1
            case .gone: break
            }
          },
        ],
        check: {
          defer { container.subscriptionLeft() }
          let final = 66
          if look.halfDone != 0, container.publishedVersion == look.version {
            return "found half done at version \(look.version), and it never moved"
          }
          if look.halfDone == 0, look.value != final, container.publishedVersion == look.version {
            return "read \(look.value) at version \(look.version), and it never moved"
          }
          if container.read != final { return "value \(container.read), not \(final)" }
          if let failure = journal.check(ranExactly: ["A.0"] + backlog + ["B.1"]) {
            return failure
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }

  /// `write`'s journal entry, through a proxy that only reads.
  static func readOnly(
    _ proxy: ThreadSafeWriterProxy<Int>, _ journal: ScheduleJournal, _ event: String
  ) {
    journal.enter(event)
    _ = proxy.write
    journal.leave()
  }
}
