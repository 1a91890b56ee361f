import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// The async entries, with their tasks run by a `ScheduleExecutor` on one of the
/// schedule's threads: an `await write` served in turn, a cancelled one skipped, a
/// `checkout()` handed the writer at its turn, and a `changes()` consumer woken by
/// publications.
extension ScheduleScenarioTests {
  /// What a schedule's tasks leave, on the executor's thread.
  final class Tasks: @unchecked Sendable {
    // Sendable: touched only by tasks that run on one executor thread, and by the check
    // once every thread has ended.
    var finished = 0
    var values: [Int] = []
  }

  /// Cancels `task` as one scheduling step. The runtime runs the cancellation handler
  /// holding the task's status lock, which a thread resuming that task waits for: a lock
  /// the scheduler cannot see, so the cancellation must not be split by a switch.
  static func cancelInOneStep<Success, Failure>(_ task: Task<Success, Failure>) {
    sw_sched_hold(true)
    task.cancel()
    sw_sched_hold(false)
  }

  /// An `await write` and an `await writeUnlessCancelled` queue behind a held proxy, and a
  /// third task cancels the second, racing the release that serves them: the first is run
  /// by the serving thread, in turn; the second is skipped if cancelled before its turn,
  /// and runs otherwise. Either way each task ends, and every write runs once.
  @Test func asyncWritesAreServedInTurnOrSkippedOnceCancelled() {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    Scheduler.check(
      pct: 300, exhaustive: 1_000, reaches: [.entryAsyncWrite, .entryCancelledSkipped]
    ) {
      let container = Self.makeContainer()
      sw_store_release(container.lock.spinRounds, 0)  // async writes queue without spinning
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let tasks = Tasks()
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            journal.leave()
            held.strong = nil
          },
          {
            let executor = ScheduleExecutor()
            Task(executorPreference: executor) {
              await container.write {
                journal.enter("T.1")
                $0 += 1
                journal.leave()
              }
              tasks.finished += 1
            }
            let cancellable = Task(executorPreference: executor) {
              try? await container.writeUnlessCancelled {
                journal.enter("T.2")
                $0 += 1
                journal.leave()
              }
              tasks.finished += 1
            }
            Task(executorPreference: executor) {
              Self.cancelInOneStep(cancellable)
              tasks.finished += 1
            }
            executor.run { tasks.finished == 3 }
          },
        ],
        check: {
          let expected = ["A.0", "T.1"] + (journal.events.contains("T.2") ? ["T.2"] : [])
          return Self.finalCheck(container, journal, ran: expected)
        })
    }
  }

  /// A `writeUnlessCancelled` cancelled from another thread while it queues: the
  /// cancellation lands before its entry is queued (the task resumes itself and never
  /// queues), while it waits (the server skips its entry), or after its turn (its write
  /// runs). Every schedule ends with the holder's write and, at most once, the task's.
  @Test func aTaskCancelledAsItQueuesNeverQueues() {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    final class Handle: @unchecked Sendable {
      // Sendable: the scheduler orders every access, as for ScheduleBox.
      var task: Task<Void, Never>?
    }
    Scheduler.check(pct: 300, exhaustive: 1_000, reaches: [.taskCancelNew]) {
      let container = Self.makeContainer()
      sw_store_release(container.lock.spinRounds, 0)  // async writes queue without spinning
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let tasks = Tasks()
      let handle = Handle()
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            journal.leave()
            held.strong = nil
          },
          {
            let executor = ScheduleExecutor()
            handle.task = Task(executorPreference: executor) {
              try? await container.writeUnlessCancelled {
                journal.enter("T.1")
                $0 += 1
                journal.leave()
              }
              tasks.finished += 1
            }
            executor.run { tasks.finished == 1 }
          },
          {
            while handle.task == nil { sw_yield_thread() }
            Self.cancelInOneStep(handle.task!)
          },
        ],
        check: {
          let expected = ["A.0"] + (journal.events.contains("T.1") ? ["T.1"] : [])
          return Self.finalCheck(container, journal, ran: expected)
        })
    }
  }

  /// A task's `checkout()` queues behind a held proxy while another thread queues two
  /// writes, and a second task cancels the first, racing the turn. At its turn the server
  /// hands the task the writer as it sleeps, and stops serving: the proxy's release serves
  /// the rest. A release before the task queues lets its own enqueue take the writer; a
  /// cancellation before the turn makes it throw, and the server skips its entry. Every
  /// schedule ends with the others' writes once each and the task's at most once, and
  /// with every task ended: a hand-over lost to the cancellation would hang it.
  @Test func aCheckoutIsHandedTheWriterAtItsTurnUnlessCancelledFirst() {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    Scheduler.check(
      pct: 500, exhaustive: 2_000,
      reaches: [
        .entryCheckout, .entryCancelledSkipped, .handOffArriveCheckoutTakesTheWriter,
        .taskCancelWaiting,
      ]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let tasks = Tasks()
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            journal.leave()
            held.strong = nil
          },
          {
            let executor = ScheduleExecutor()
            let checkout = Task(executorPreference: executor) {
              if let writer = try? await container.checkout() {
                Self.write(writer, journal, "T.1")
              }
              tasks.finished += 1
            }
            Task(executorPreference: executor) {
              Self.cancelInOneStep(checkout)
              tasks.finished += 1
            }
            executor.run { tasks.finished == 2 }
          },
          {
            for event in ["B.1", "B.2"] {
              container.writeNext {
                Self.write($0, journal, event)
                sw_yield_thread()  // the task may run meanwhile, and find the writer busy
              }
            }
          },
        ],
        check: {
          let ran = journal.events.contains("T.1")
          return Self.finalCheck(
            container, journal, ran: ["A.0"] + (ran ? ["T.1"] : []) + ["B.1", "B.2"])
        })
    }
  }

  /// A task's `checkout()` queues behind a held proxy, and another thread's `withWriter`
  /// blocks behind both. At the release the checkout is offered to the task as it sleeps;
  /// the task claims it when it runs, or, when the clock jumps past the claim window
  /// first, the blocked `withWriter` takes it back and runs in the task's place, and the
  /// task's entry goes back to the front: the task then waits again, or claims a second
  /// offer, and the `withWriter`'s own entry is skipped. Both write once and nothing waits
  /// forever: a `withWriter` waiting for a task that never gets a thread is what this
  /// prevents.
  @Test func aBlockedWithWriterTakesBackACheckoutItsTaskLeftUnclaimed() {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    // Two jumps of the clock: past the `withWriter`'s bound on being overtaken, so that it
    // queues, and past the claim window while the executor's thread is not scheduled.
    // Rare under PCT: a proxy access that begins inline behind a parked `withWriter` (one
    // compare-and-exchange, no retry) moved the schedules that reach it past 2,000.
    Scheduler.check(
      pct: 6_000, exhaustive: 2_000, deadlineJumps: 3,
      reaches: [
        .entryCheckout, .entryWaiter, .entryWaiterRanEarly, .taskClaim, .taskExpire, .taskRearm,
      ]
    ) {
      let container = Self.makeContainer()
      sw_store_release(container.lock.spinRounds, 0)  // the `withWriter` parks at once
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      let tasks = Tasks()
      journal.enter("A.0")
      return Scheduler.Run(
        threads: [
          {
            held.strong!.write += 1
            // Held for 20 µs of virtual time, as on a core of its own: the `withWriter`
            // spins out its budget meanwhile and parks.
            Self.spin(nanoseconds: 20_000, yielding: true)
            journal.leave()
            held.strong = nil
          },
          {
            let executor = ScheduleExecutor()
            Task(executorPreference: executor) {
              if let writer = try? await container.checkout() {
                Self.write(writer, journal, "T.1")
              }
              tasks.finished += 1
            }
            executor.run { tasks.finished == 1 }
          },
          {
            container.withWriter {
              journal.enter("C.1")
              $0 += 1
              // Held a while, so that a task whose offer this took back runs meanwhile,
              // fails its claim, and waits again.
              Self.spin(nanoseconds: 20_000, yielding: true)
              journal.leave()
            }
          },
        ],
        check: { Self.finalCheck(container, journal, ran: ["A.0", "T.1", "C.1"]) })
    }
  }

  /// A task iterates `changes()` while another thread writes twice: the consumer sleeps
  /// between values, and the end of each write publishes, which wakes it. It sees the
  /// value rise to 2, never goes back, and misses no publication (a missed one leaves it
  /// asleep for good: a deadlock); some schedules must wake it from its sleep.
  @Test func aChangesConsumerIsWokenByEachPublication() {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    var woken = 0
    Scheduler.check(
      pct: 500, exhaustive: 2_000,
      reaches: [.wordObserve, .wordEndObservedClosureWrite, .wordTakeDirty, .wordUnobserve]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let tasks = Tasks()
      return Scheduler.Run(
        threads: [
          {
            let executor = ScheduleExecutor()
            Task(executorPreference: executor) {
              for await value in container.changes() {
                tasks.values.append(value)
                if value == 2 { break }
              }
              tasks.finished += 1
            }
            executor.run { tasks.finished == 1 }
          },
          {
            container.withWriter {
              journal.enter("W.1")
              $0 += 1
              journal.leave()
            }
            Self.queue(container, journal, "W.2")
          },
        ],
        check: {
          if container.hub.withLock({ container.hub.wakeCount }) != 0 { woken += 1 }
          if tasks.values.last != 2 || tasks.values != tasks.values.sorted() {
            return "the consumer saw \(tasks.values)"
          }
          if container.isObserved { return "still observed after the consumer left" }
          return Self.finalCheck(container, journal, ran: ["W.1", "W.2"])
        })
    }
    #expect(woken > 0, "no schedule woke the consumer from its sleep")
  }
}

extension ScheduleScenarioTests {
  /// What the producers of a bounded backlog saw, on the schedule's threads.
  final class Seen: @unchecked Sendable {
    // Sendable: each field is written by one scheduled thread, read once all have ended.
    var firstReturned = false
    var mostQueued = 0
  }

  /// A bounded backlog (one write) behind a held proxy, whose holder queued one past it:
  /// a `drained()` queues, a producer waits for room, then a second one queues once the
  /// first returned, while the proxy's release runs the queue. The `drained()` marker is
  /// not a write: while it is run, no producer may be let in past the bound.
  @Test func aDrainMarkerRunningNeverLetsAProducerPastTheBound() {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    // PCT finds the window of a marker counted as a write and taken back after about
    // 2,400 schedules.
    Scheduler.check(pct: 4_000, exhaustive: 1_000, reaches: [.entryWrite]) {
      let container = Container(value: 0, maxQueuedWrites: 1)
      sw_sched_name_word(container.lock.state, "the state word")
      sw_sched_name_word(container.lock.handOffLock, "the hand-off lock")
      let journal = ScheduleJournal()
      let held = ScheduleBox(container.writer!)
      Self.queue(container, journal, "H.0")  // the holder queues past the bound
      let tasks = Tasks()
      let seen = Seen()
      return Scheduler.Run(
        threads: [
          { held.strong = nil },
          {
            let executor = ScheduleExecutor()
            Task(executorPreference: executor) {
              await container.drained()
              tasks.finished += 1
            }
            executor.run { tasks.finished == 1 }
          },
          {
            Self.queue(container, journal, "P.1")
            seen.firstReturned = true
          },
          {
            while !seen.firstReturned { sw_yield_thread() }
            Self.queue(container, journal, "Q.2")
            seen.mostQueued = container.queuedWrites
          },
        ],
        check: {
          if seen.mostQueued > 1 {
            return "queuedWrites read \(seen.mostQueued) past the bound of 1"
          }
          return Self.finalCheck(container, journal, ran: ["H.0", "P.1", "Q.2"])
        })
    }
  }
}
