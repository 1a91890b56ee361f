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
  /// through the proxy, or queues if it is busy. Every write runs once, and the one-step
  /// end is refused whenever something waits (the queue is then served). The thread that
  /// subscribes also looks as a consumer does, collecting the version, then reading:
  /// every checkout that wrote publishes, so if the version has not moved since that
  /// look, the value it read was the last.
  @Test func anObservedInPlaceWriteNextEndsAtOnce() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.wordEndObservedCheckout, .handOffArriveSettingQueued, .entryWrite]
    ) {
      let container = Self.makeContainer()
      let journal = ScheduleJournal()
      let kept = container.changes()
      let start = container.publishedVersion
      let look = ScheduleLook()
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
            look.version = container.publishedVersion
            look.value = container.read
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
          let final = container.publishedVersion
          if final == start { return "4 writes and no publication" }
          if final == look.version, look.value != 4 {
            return "a look at version \(final) read \(look.value); a later write did not publish"
          }
          return nil
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

/// What a consumer's look found: the version it collected, then the value it read.
final class ScheduleLook: @unchecked Sendable {
  // Sendable: the scheduler orders every access, as for ScheduleJournal.
  var version: UInt64 = 0
  var value = -1
  var halfDone = 0
  var torn: [Int] = []
}

extension ScheduleScenarioTests {
  /// One change made by two accesses through `proxy`: a consumer that reads between them
  /// sees an odd value.
  @Sendable static func addTwice(_ proxy: ThreadSafeWriterProxy<Int>) {
    proxy.write += 1
    proxy.write += 1
  }

  /// `addTwice` through a proxy checked out here, or, if the writer is busy, a queued
  /// `writeNext` body's.
  static func addTwiceThroughAProxy(_ container: Container) {
    if let writer = container.writer { addTwice(writer) } else { container.writeNext(addTwice) }
  }
}

extension ScheduleScenarioTests {
  /// Two accesses through a proxy make one change: a consumer must never read between
  /// them. Thread A checks the writer out and adds 1 twice through it, or, if it is busy,
  /// queues a `writeNext` body that does; B queues such a body too, so that A's end may
  /// find it queued and go the slow way (the access's `proxy_wrote` mark goes back for
  /// serving to publish); C reads as a consumer twice (`readWhole`), which must find the
  /// value half done, never odd.
  @Test func aConsumerNeverReadsBetweenTwoAccessesOfOneCheckout() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.proxyAccessBegin, .wordEndObservedCheckout, .entryWrite]
    ) {
      let container = Self.makeContainer()
      let kept = container.changes()
      let look = ScheduleLook()
      return Scheduler.Run(
        threads: [
          {
            Self.addTwiceThroughAProxy(container)
          },
          { container.writeNext(Self.addTwice) },
          {
            for _ in 0..<2 {
              switch container.readWhole({ $0 }) {
              case .value(let value): if value % 2 != 0 { look.torn.append(value) }
              case .halfDone: look.halfDone += 1
              case .gone: break
              }
            }
          },
        ],
        check: {
          withExtendedLifetime(kept) {}
          if let failure = Self.isFreeAndEmpty(container) { return failure }
          if container.read != 4 { return "value \(container.read), not 4" }
          if !look.torn.isEmpty { return "a consumer read \(look.torn), half a checkout" }
          if container.lock.word.isDirty { return "dirty after every checkout ended" }
          if sw_load_relaxed(container.lock.proxyWrote) != 0 {
            return "proxy_wrote left set after every checkout ended"
          }
          return nil
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// The only subscriber leaves and another arrives (B, as their bookkeeping does it)
  /// while thread A writes through a proxy it checked out: A's access may find the
  /// checkout observed by the first, store its `proxy_wrote` mark after the arrival
  /// cleared stale marks, and end its checkout unobserved (leaving the mark) before the
  /// arrival sets `observed`. No mark may outlive that end: with the container observed
  /// again, a later checkout that only reads must publish nothing (a non-`Equatable`
  /// stream would deliver a spurious element).
  ///
  /// Or the first tracked read arrives instead (`tracks`): then the later checkout must
  /// not notify the Observation module either.
  @Test(arguments: [false, true])
  func aMarkNeverOutlivesAnUnobservedEnd(tracks: Bool) {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.proxyAccessBegin, .wordUnobserve, .wordObserve, .wordEndCheckout]
    ) {
      let container = Self.makeContainer()
      let kept = container.changes()
      let notifier = CountingNotifier()
      return Scheduler.Run(
        threads: [
          { if let writer = container.writer { writer.write += 1 } },
          {
            // The subscription's own bookkeeping, as the last one leaves and one arrives.
            container.subscriptionLeft()
            if tracks {
              container.hub.installNotifier {
                notifier
              } markObserved: {
                container.lock.observe()
              }
            } else {
              container.subscriptionArrived()
            }
          },
        ],
        check: {
          // Before `isFreeAndEmpty`, whose checkout only reads too.
          let before = (container.publishedVersion, notifier.count)
          do {
            guard let writer = container.writer else { return "the writer is still checked out" }
            _ = writer.write
          }
          let after = (container.publishedVersion, notifier.count)
          withExtendedLifetime(kept) {}
          if after != before {
            return
              "a checkout that only read published (version, notifications \(before) -> \(after))"
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// A task iterates `changes()` while every checkout adds 1 twice through a proxy: thread
  /// A through one it checked out (or a `writeNext` body if the writer is busy), B through
  /// a `writeNext` body. Publications coalesce into `pending` and the accesses mark
  /// `proxy_wrote`; the consumer must still get only whole values (even), never go back,
  /// and get the last one (else it sleeps for good: a deadlock).
  @Test(arguments: [true, false])
  func aConsumerGetsEveryWholeValueOfProxyCheckouts(subscribesEarly: Bool) {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    Scheduler.check(
      pct: 500, exhaustive: 2_000,
      reaches: [.proxyAccessBegin, .wordEndObservedCheckout, .entryWrite]
    ) {
      let container = Self.makeContainer()
      let tasks = Tasks()
      let changes = subscribesEarly ? container.changes() : nil
      return Scheduler.Run(
        threads: [
          {
            let executor = ScheduleExecutor()
            Task(executorPreference: executor) {
              for await value in changes ?? container.changes() {
                tasks.values.append(value)
                if value == 4 { break }
              }
              tasks.finished += 1
            }
            executor.run { tasks.finished == 1 }
          },
          {
            Self.addTwiceThroughAProxy(container)
          },
          { container.writeNext(Self.addTwice) },
        ],
        check: {
          if tasks.values.last != 4 || tasks.values != tasks.values.sorted()
            || tasks.values.contains(where: { $0 % 2 != 0 })
          {
            return "the consumer saw \(tasks.values)"
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// A proxy handed to another thread between its two accesses.
  final class Handed: @unchecked Sendable {
    // Sendable: the scheduler orders every access, as for ScheduleJournal.
    var proxy: ThreadSafeWriterProxy<Int>?
    var settled = false
  }

  /// Thread A checks the writer out and adds 1 through the proxy, then hands it to C,
  /// which adds 1 more and lets it go (its release ends the checkout on C); if the writer
  /// was busy, A queues a body that adds 2 in two accesses. B queues such a body too. A
  /// task consuming `changes()` must get only whole values (even), in order, up to 4.
  @Test func aConsumerNeverSeesHalfOfAHandedProxy() {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
    Scheduler.check(
      pct: 500, exhaustive: 2_000,
      reaches: [.proxyAccessBegin, .wordEndObservedCheckout]
    ) {
      let container = Self.makeContainer()
      let tasks = Tasks()
      let handed = Handed()
      let changes = container.changes()
      return Scheduler.Run(
        threads: [
          {
            let executor = ScheduleExecutor()
            Task(executorPreference: executor) {
              for await value in changes {
                tasks.values.append(value)
                if value == 4 { break }
              }
              tasks.finished += 1
            }
            executor.run { tasks.finished == 1 }
          },
          {
            if let writer = container.writer {
              writer.write += 1
              handed.proxy = writer
            } else {
              container.writeNext(Self.addTwice)
            }
            handed.settled = true
          },
          {
            while !handed.settled { sw_yield_thread() }
            handed.proxy?.write += 1
            handed.proxy = nil
          },
          { container.writeNext(Self.addTwice) },
        ],
        check: {
          if tasks.values.last != 4 || tasks.values != tasks.values.sorted()
            || tasks.values.contains(where: { $0 % 2 != 0 })
          {
            return "the consumer saw \(tasks.values)"
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// Counts notifications, as the Observation module's tracker would get them.
  final class CountingNotifier: ChangeNotifier, @unchecked Sendable {
    // Sendable: the scheduler orders every access, as for ScheduleJournal.
    var count = 0
    func notifyChange() { count += 1 }
  }

  /// A tracked container (tracked before the run): A writes twice through a proxy it
  /// checked out, B checks out and only reads, C's `writeNext` body writes once. Tracked,
  /// every publication takes the slow path: exactly one notification per checkout that
  /// wrote, none for B's.
  @Test func aTrackedContainerIsToldOncePerCheckoutThatWrote() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.proxyAccessBegin, .wordEndObservedCheckout, .entryWrite]
    ) {
      let container = Self.makeContainer()
      let notifier = CountingNotifier()
      container.hub.installNotifier {
        notifier
      } markObserved: {
        container.lock.observe()
      }
      let look = ScheduleLook()
      return Scheduler.Run(
        threads: [
          {
            if let writer = container.writer {
              Self.addTwice(writer)
            } else {
              container.writeNext(Self.addTwice)
            }
          },
          {
            if let writer = container.writer { look.value = writer.write }
          },
          { container.writeNext { $0.write += 1 } },
        ],
        check: {
          if container.read != 3 { return "value \(container.read), not 3" }
          if notifier.count != 2 {
            return "\(notifier.count) notifications for 2 checkouts that wrote"
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// Looks by two consumers at once, each collecting the version and then reading, while
  /// A writes through a proxy and B through a `writeNext` body (each adds 1 twice):
  /// publications find `pending` set and leave it, collections race. A look whose version
  /// is the final one must have read the final value (else a write ended unpublished, or
  /// its publication was folded into a version whose reader missed it), and each
  /// consumer's versions and values only grow.
  @Test func twoConsumersCollectingAtOnceMissNoWrite() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.proxyAccessBegin, .wordEndObservedCheckout]
    ) {
      let container = Self.makeContainer()
      let kept = container.changes()
      let looks = [ScheduleLook(), ScheduleLook()]
      let seen = [ScheduleLook(), ScheduleLook()]
      @Sendable func consume(_ index: Int) {
        for _ in 0..<2 {
          let version = container.publishedVersion
          guard case .value(let value) = container.readWhole({ $0 }) else { continue }
          if version < looks[index].version || value < looks[index].value {
            seen[index].torn.append(value)
          }
          looks[index].version = version
          looks[index].value = value
        }
      }
      return Scheduler.Run(
        threads: [
          {
            Self.addTwiceThroughAProxy(container)
          },
          { container.writeNext(Self.addTwice) },
          { consume(0) },
          { consume(1) },
        ],
        check: {
          withExtendedLifetime(kept) {}
          if container.read != 4 { return "value \(container.read), not 4" }
          let final = container.publishedVersion
          for (index, look) in looks.enumerated() {
            if !seen[index].torn.isEmpty { return "consumer \(index) went back" }
            if look.version == final, look.value != 4 {
              return "consumer \(index) read \(look.value) at the final version \(final)"
            }
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// A subscription arrives while a served run holds the checkout: thread A's `writeNext`
  /// queues behind a held proxy, B releases the proxy and so serves A's write, and C
  /// subscribes, then looks as a consumer does. Arriving while the run holds the
  /// checkout, it may find the served write's `proxy_wrote` mark, so a consumer may find
  /// the value half done and wait: the run must publish, even when the arrival came just
  /// as it took the mark (it takes the mark, then looks for observers) or before it
  /// released.
  @Test func aSubscriptionArrivingAsAServedRunReleasesIsPublishedTo() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.wordObserve, .wordRelease, .entryWrite]
    ) {
      let container = Self.makeContainer()
      let held = ScheduleBox(container.writer!)
      let look = ScheduleLook()
      let subscription = ScheduleChanges()
      return Scheduler.Run(
        threads: [
          { container.writeNext { $0.write += 1 } },
          { held.strong = nil },
          {
            subscription.changes = container.changes()
            look.version = container.publishedVersion
            if case .halfDone = container.readWhole({ $0 }) { look.halfDone += 1 }
          },
        ],
        check: {
          withExtendedLifetime(subscription) {}
          if container.read != 1 { return "value \(container.read), not 1" }
          if look.halfDone != 0, container.publishedVersion == look.version {
            return "a consumer found the value half done at version \(look.version), and "
              + "no publication followed: it would sleep for good"
          }
          if container.lock.word.isDirty { return "dirty after every checkout ended" }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

/// A `changes()` subscription that a scenario's thread makes.
final class ScheduleChanges: @unchecked Sendable {
  // Sendable: the scheduler orders every access, as for ScheduleJournal.
  var changes: ThreadSafeSingleWriter<Int>.Changes<Int>?
}

extension ScheduleScenarioTests {
  /// What a saver looked at: the versions it collected, each with the value it then read.
  final class Looks: @unchecked Sendable {
    // Sendable: the scheduler orders every access, as for ScheduleJournal.
    var list: [(version: UInt64, value: Int)] = []
  }

  /// What `saved()` relies on: a writer that ends its checkout and then reads the version
  /// (as `saved()` does after the caller's write) gets one at which no value without its
  /// write is delivered. A saver looks twice (collect, then read) while A adds 10 through a
  /// proxy and B adds 1 through a `writeNext` body, each then reading the version if its
  /// write is over (B's ran in place): every look at that version or a later one must
  /// have read a value with that write in it.
  @Test func aVersionReadAfterAWriteIsNeverDeliveredWithoutIt() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.proxyAccessBegin, .wordEndObservedCheckout]
    ) {
      let container = Self.makeContainer()
      let kept = container.changes()
      let flushes = [ScheduleLook(), ScheduleLook()]
      let looks = Looks()
      return Scheduler.Run(
        threads: [
          {
            if let writer = container.writer {
              writer.write += 10
            } else {
              return
            }
            flushes[0].version = container.publishedVersion
            flushes[0].value = 1
          },
          {
            let me = sw_current_thread()
            let ranOn = ScheduleLook()
            container.writeNext {
              $0.write += 1
              ranOn.value = Int(bitPattern: sw_current_thread())
            }
            guard ranOn.value == Int(bitPattern: me) else { return }
            flushes[1].version = container.publishedVersion
            flushes[1].value = 1
          },
          {
            for _ in 0..<2 {
              let version = container.publishedVersion
              if case .value(let value) = container.readWhole({ $0 }) {
                looks.list.append((version, value))
              }
            }
          },
        ],
        check: {
          withExtendedLifetime(kept) {}
          for (index, flush) in flushes.enumerated() where flush.value > 0 {
            for look in looks.list where look.version >= flush.version {
              let has = index == 0 ? look.value >= 10 : look.value % 10 == 1
              if !has {
                return "a look at version \(look.version) read \(look.value), without the write "
                  + "whose writer then read version \(flush.version)"
              }
            }
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// The first subscriber arrives (B, as its bookkeeping does it, then a consumer's look:
  /// the version, then the value, twice) while thread A holds a proxy it checked out with
  /// nobody observing, and either adds 1 twice through it or only reads. Accesses mark
  /// `proxy_wrote` observed or not, so the arrival guesses nothing: the consumer never
  /// reads half a checkout, finds the value half done only if the checkout wrote (a
  /// checkout that only read held up `saved()` when an arrival counted every held
  /// checkout as dirty), and a look whose value was not the last sees the version move.
  @Test(arguments: [false, true])
  func anArrivalMidCheckoutFindsItHalfDoneOnlyIfItWrote(writes: Bool) {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.wordObserve, .wordEndObservedCheckout]
    ) {
      let container = Self.makeContainer()
      let looks = [ScheduleLook(), ScheduleLook()]
      return Scheduler.Run(
        threads: [
          {
            guard let writer = container.writer else { return }
            if writes {
              Self.addTwice(writer)
            } else {
              _ = writer.write
              _ = writer.write
            }
          },
          {
            container.subscriptionArrived()
            Self.look(at: container, into: looks)
          },
        ],
        check: {
          defer { container.subscriptionLeft() }
          let final = writes ? 2 : 0
          if container.read != final { return "value \(container.read), not \(final)" }
          if !writes, looks.contains(where: { $0.halfDone != 0 }) {
            return "a checkout that only read was taken for half done"
          }
          if let failure = Self.looksFailure(looks, container, final: final) { return failure }
          if sw_load_relaxed(container.lock.proxyWrote) != 0 {
            return "proxy_wrote left set after the checkout ended"
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// The first subscriber arrives (B, as in `anArrivalMidCheckoutFindsItHalfDoneOnlyIfItWrote`)
  /// while thread A serves a `writeNext` body it queued behind its own checkout, which
  /// adds 1 twice through the lent proxy. A consumer that finds the value half done waits
  /// for the version to move: serving must publish the body's write, even when it looked
  /// at `observed` before the arrival and at the mark after the consumer did.
  @Test func anArrivalWhileServingHearsTheServedBodysWrite() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.wordObserve, .entryWrite]
    ) {
      let container = Self.makeContainer()
      let looks = [ScheduleLook(), ScheduleLook()]
      return Scheduler.Run(
        threads: [
          {
            guard let writer = container.writer else { return }
            container.writeNext(Self.addTwice)  // queued: served as `writer` ends
            withExtendedLifetime(writer) {}
          },
          {
            container.subscriptionArrived()
            Self.look(at: container, into: looks)
          },
        ],
        check: {
          defer { container.subscriptionLeft() }
          if container.read != 2 { return "value \(container.read), not 2" }
          if let failure = Self.looksFailure(looks, container, final: 2) { return failure }
          if sw_load_relaxed(container.lock.proxyWrote) != 0 {
            return "proxy_wrote left set after the checkout ended"
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// As `anArrivalWhileServingHearsTheServedBodysWrite`, with a second queued body that
  /// only reads, so that the checkout passes on after the writing one, and (`leavesFirst`)
  /// with the last subscriber leaving just before the first arrives. The consumer never
  /// reads half the writing body, never waits on a version that does not move, and the
  /// mark does not outlive the run: a later checkout that only reads publishes nothing.
  @Test(arguments: [false, true])
  func aSubscriberComingAndGoingWhileServingNeverWaitsForNothing(leavesFirst: Bool) {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.wordObserve, .entryWrite]
    ) {
      let container = Self.makeContainer()
      if leavesFirst { container.subscriptionArrived() }
      let looks = [ScheduleLook(), ScheduleLook()]
      return Scheduler.Run(
        threads: [
          {
            guard let writer = container.writer else { return }
            container.writeNext(Self.addTwice)
            container.writeNext { _ = $0.write }  // reads only
            withExtendedLifetime(writer) {}
          },
          {
            if leavesFirst { container.subscriptionLeft() }
            container.subscriptionArrived()
            Self.look(at: container, into: looks)
          },
        ],
        check: {
          defer { container.subscriptionLeft() }
          if container.read != 2 { return "value \(container.read), not 2" }
          if let failure = Self.looksFailure(looks, container, final: 2) { return failure }
          let before = container.publishedVersion
          do {
            guard let writer = container.writer else { return "the writer is still checked out" }
            _ = writer.write
          }
          if container.publishedVersion != before {
            return
              "a checkout that only read published (version \(before) -> \(container.publishedVersion))"
          }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// The first subscriber arrives (B, as in `anArrivalWhileServingHearsTheServedBodysWrite`)
  /// while thread A's `transaction` body holds the checkout and adds 1 twice to its copy,
  /// or commits. The consumer never reads an odd value, and one that read the value from
  /// before the commit, or found it half done, sees the version move.
  @Test func anArrivalMidTransactionHearsItsCommit() {
    Scheduler.check(
      pct: 1_000, exhaustive: 5_000,
      reaches: [.wordObserve]
    ) {
      let container = Self.makeContainer()
      let looks = [ScheduleLook(), ScheduleLook()]
      return Scheduler.Run(
        threads: [
          {
            container.transaction { value in
              value += 1
              sw_yield_thread()
              value += 1
            }
          },
          {
            container.subscriptionArrived()
            Self.look(at: container, into: looks)
          },
        ],
        check: {
          defer { container.subscriptionLeft() }
          if container.read != 2 { return "value \(container.read), not 2" }
          if let failure = Self.looksFailure(looks, container, final: 2) { return failure }
          return Self.isFreeAndEmpty(container)
        })
    }
  }
}

extension ScheduleScenarioTests {
  /// A consumer's looks, one per element of `looks`: the version it collects, then the
  /// value it reads whole (an odd one is half of an `addTwice`).
  static func look(at container: Container, into looks: [ScheduleLook]) {
    for look in looks {
      look.version = container.publishedVersion
      switch container.readWhole({ $0 }) {
      case .value(let value):
        look.value = value
        if value % 2 != 0 { look.torn.append(value) }
      case .halfDone: look.halfDone += 1
      case .gone: break
      }
    }
  }

  /// What is wrong with `looks` once every checkout has ended with the value `final`: one
  /// read half a checkout, or read an older value or found it half done, and the version
  /// never moved after it (the consumer would sleep for good).
  static func looksFailure(
    _ looks: [ScheduleLook], _ container: Container, final: Int
  ) -> String? {
    for look in looks {
      if !look.torn.isEmpty { return "a consumer read \(look.torn), half a checkout" }
      if look.halfDone == 0, look.value != final, container.publishedVersion == look.version {
        return "read \(look.value) at version \(look.version), and it never moved"
      }
      if look.halfDone != 0, container.publishedVersion == look.version {
        return "found half done at version \(look.version), and it never moved"
      }
    }
    return nil
  }
}
