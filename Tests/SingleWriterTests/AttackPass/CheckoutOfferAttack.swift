import Foundation
import Testing

@testable import SingleWriter

// Promises "A checkout is handed over", "Cancellation", "FIFO", "Quiescence", "The backlog
// is visible", "Fair to withWriter" and the observation rows, against the offer made to a
// sleeping `checkout()`: claimed by its task, or taken back by a blocked `withWriter`,
// which writes in its place while the task keeps its place at the front.
//
// A task that "cannot run" is made with `Task(executorPreference:)` on a `ScheduleExecutor`
// that nobody runs until the test says so. Every test runs in a child with a watchdog.

/// Blocks until `condition` holds; stops the child with a BREAK naming `what` if it does
/// not within `seconds`.
func coaAwait(_ seconds: Double = 60, _ what: @autoclosure () -> String, _ condition: () -> Bool) {
  if !eventually(atMost: seconds, condition) { atkEnd(breakingIf: true, "stuck: \(what())") }
}

/// Takes `a`'s writer on a thread of its own and returns it, so that this thread is not
/// marked as its holder (its writes are then no debt of the release).
func coaTakeElsewhere<V: Sendable>(_ a: ThreadSafeSingleWriter<V>) -> ThreadSafeWriterProxy<V> {
  let box = Locked<ThreadSafeWriterProxy<V>?>(nil)
  let done = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    box.withLock { $0 = a.writer }
    done.signal()
  }
  done.wait()
  let proxy = box.withLock { $0.take() }
  precondition(proxy != nil, "the writer was not free")
  return proxy!
}

/// Runs `executor` on a fresh thread until `done`, and waits for it.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
func coaRun(_ executor: ScheduleExecutor, until done: @escaping @Sendable () -> Bool) {
  let finished = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    executor.run(until: done)
    finished.signal()
  }
  finished.wait()
}

/// Runs `body` on a thread of its own (4 MiB stack) and blocks until it returns.
func coaOnThread(_ body: @escaping @Sendable () -> Void) {
  let finished = DispatchSemaphore(value: 0)
  let thread = Thread {
    body()
    finished.signal()
  }
  thread.stackSize = 4 << 20
  thread.start()
  finished.wait()
}

/// The inbox's length, drains included (which `queuedWrites` and `pendingCount` leave out).
/// Whether the batch holds a `checkout()` entry whose task waits again, after its offer
/// was taken back. Only while the checkout's holder is parked in its body.
func coaFrontCheckoutWaits<V>(_ a: ThreadSafeSingleWriter<V>) -> Bool {
  var waits = false
  a.pending.pointee.forEach { entry in
    if case .checkout(let waiter) = entry, waiter.current == .waiting { waits = true }
  }
  return waits
}

func coaInboxCount<V>(_ a: ThreadSafeSingleWriter<V>) -> Int {
  a.lock.withHandOffLock { a.handOff.pointee.inbox.count }
}

@Suite(.serialized) struct AttackPassCheckoutOffer {
  // MARK: 1. Every pool thread blocked in withWriter behind an offer its task cannot claim

  /// A `checkout()` whose task cannot run is reached with every thread of the cooperative
  /// pool, and more threads, blocked in `withWriter` behind it: every `withWriter` must
  /// end (taking the offer back) while the task still cannot run; then the task, run at
  /// last, must check out and write exactly once. Nothing lost, nothing doubled, the
  /// writer free and nothing queued at the end of every round.
  @Test func everyBlockedWithWriterEndsBehindAnUnclaimableOfferAndTheCheckoutStillWritesOnce()
    async
  {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(25, "withWriters behind an unclaimable offer")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      coaOnThread {
        let a = ThreadSafeSingleWriter(value: 0)
        let poolBlockers = 8
        let threadBlockers = 4
        for round in 0..<30 {
          let base = a.read
          var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
          let executor = ScheduleExecutor()
          let finished = SharedFlag()
          let got = Locked<Bool?>(nil)
          Task(executorPreference: executor) {
            do {
              let proxy = try await a.checkout()
              proxy.write += 1_000
              got.withLock { $0 = true }
            } catch {
              got.withLock { $0 = false }
            }
            finished.set()
          }
          coaRun(executor) { a.pendingCount == 1 }  // queued, then never run
          let done = Counter()
          for _ in 0..<poolBlockers {
            Task.detached {
              a.withWriter { $0 += 1 }
              done.add(1)
            }
          }
          for _ in 0..<threadBlockers {
            Thread.detachNewThread {
              a.withWriter { $0 += 1 }
              done.add(1)
            }
          }
          let all = poolBlockers + threadBlockers
          // Even rounds: release once some withWriters have queued behind the checkout;
          // odd rounds: at once, so that others arrive after the offer.
          if round % 2 == 0 {
            coaAwait(60, "withWriters never queued (round \(round))") { a.queuedWrites >= 3 }
          }
          held = nil  // offers the checkout to the task, which cannot run
          _ = held
          coaAwait(
            5,
            "round \(round): \(done.load()) of \(all) withWriters ended behind an offer whose "
              + "task cannot run; queued \(a.queuedWrites), value \(a.read - base)"
          ) { done.load() == all }
          if finished.isSet { atkEnd(breakingIf: true, "the task ran, though never scheduled") }
          if a.read != base + all {
            atkEnd(breakingIf: true, "round \(round): value \(a.read - base), not \(all)")
          }
          coaRun(executor) { finished.isSet }
          let gotIt = got.withLock { $0 }
          if gotIt != true {
            atkEnd(
              breakingIf: true,
              "round \(round): the uncancelled checkout got \(String(describing: gotIt))")
          }
          coaAwait(60, "round \(round): the writer never came free") { a.queuedWrites == 0 }
          if a.read != base + all + 1_000 {
            atkEnd(breakingIf: true, "round \(round): value \(a.read - base), not \(all + 1_000)")
          }
          coaAwait(60, "round \(round): the writer is not free at the end") {
            a.writer != nil
          }
          if a.pendingCount != 0 { atkEnd(breakingIf: true, "round \(round): still queued") }
        }
      }
      atkEnd(breakingIf: false)
    }
    expectNoBreak(result)
  }

  // MARK: 6. FIFO: a checkout taken back keeps its place at the front

  /// C = `checkout()` (its task cannot run), then X = writeNext, W = a blocked withWriter,
  /// Y1...Y3 = writeNext, all behind a held proxy. The release offers C; W takes it back
  /// after a millisecond and runs in C's place, and C's entry goes back to the front.
  /// While W's body runs, the task runs: its claim fails and it waits again. So once W
  /// ends, C comes before X and Y1...Y3, which were queued after it (FIFO); only W, which
  /// took the turn, ran ahead.
  @Test func aCheckoutTakenBackKeepsItsPlaceAheadOfTheWritesQueuedAfterIt() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "FIFO after a take-back")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      coaOnThread {
        var orders: [String: Int] = [:]
        for round in 0..<10 {
          let a = ThreadSafeSingleWriter(value: [String]())
          var held: ThreadSafeWriterProxy<[String]>? = coaTakeElsewhere(a)
          let executor = ScheduleExecutor()
          let finished = SharedFlag()
          Task(executorPreference: executor) {
            if let proxy = try? await a.checkout() { proxy.write.append("C") }
            finished.set()
          }
          coaRun(executor) { a.pendingCount == 1 }
          a.writeNext { $0.write.append("X") }
          let inW = SharedFlag()
          let requeued = SharedFlag()
          let wDone = DispatchSemaphore(value: 0)
          Thread.detachNewThread {
            a.withWriter { value in
              value.append("W")
              inW.set()
              // Held until the task has run and queued again (the test waits 5 s at most).
              _ = eventually(atMost: 60) { requeued.isSet }
            }
            wDone.signal()
          }
          coaAwait(60, "W never queued") { a.queuedWrites == 3 }
          for name in ["Y1", "Y2", "Y3"] { a.writeNext { $0.write.append(name) } }
          held = nil
          _ = held
          coaAwait(60, "W never took the offer back") { inW.isSet }
          // The task runs now: its claim fails, W holds the writer, so it waits again for
          // its entry, back at the front (W holds the checkout: the batch holds still).
          coaRun(executor) { finished.isSet || coaFrontCheckoutWaits(a) }
          requeued.set()
          wDone.wait()
          coaRun(executor) { finished.isSet }
          coaAwait(60, "the queue never drained") { a.queuedWrites == 0 && a.writer != nil }
          let order = a.read.joined(separator: ",")
          orders[order, default: 0] += 1
          if round == 0 { attackErr("order seen: \(order)\n") }
        }
        let expected = "W,C,X,Y1,Y2,Y3"
        let wrong = orders.filter { $0.key != expected }
        atkEnd(
          breakingIf: !wrong.isEmpty,
          "a checkout taken back did not keep its place at the front; orders seen "
            + "(expected \(expected)): \(orders)")
      }
    }
    expectNoBreak(result)
  }

  /// "The backlog is visible": `drained()` returns only after every write queued before
  /// it ran. C = `checkout()` (its task cannot run), then D = `drained()`, then W = a
  /// blocked withWriter. W takes C back and runs in its place, and C keeps its place at
  /// the front: the drain must not return before C has checked out and written.
  @Test func aDrainQueuedBehindACheckoutThatIsTakenBackWaitsForTheCheckout() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "drained() behind a taken-back checkout")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      coaOnThread {
        var early = 0
        let rounds = 10
        for _ in 0..<rounds {
          let a = ThreadSafeSingleWriter(value: 0)
          var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
          let executor = ScheduleExecutor()
          let finished = SharedFlag()
          Task(executorPreference: executor) {
            if let proxy = try? await a.checkout() { proxy.write += 1_000 }
            finished.set()
          }
          coaRun(executor) { a.pendingCount == 1 }
          let drainSaw = Locked<Int?>(nil)
          let drain = Task.detached {
            await a.drained()
            drainSaw.withLock { $0 = a.read }
          }
          coaAwait(60, "the drain never queued") { coaInboxCount(a) == 2 }
          let wDone = DispatchSemaphore(value: 0)
          Thread.detachNewThread {
            a.withWriter { $0 += 1 }
            wDone.signal()
          }
          coaAwait(60, "W never queued") { coaInboxCount(a) == 3 }
          held = nil
          _ = held
          wDone.wait()  // W took the offer back (the task cannot run)
          // Give the drain, if it was let go, the time to say what it saw.
          _ = eventually(atMost: 0.2) { drainSaw.withLock { $0 } != nil }
          if let saw = drainSaw.withLock({ $0 }), saw < 1_000 { early += 1 }
          coaRun(executor) { finished.isSet }
          blockUntilDone(drain)
          coaAwait(60, "not settled") { a.queuedWrites == 0 && a.read == 1_001 }
        }
        atkEnd(
          breakingIf: early > 0,
          "\(early) of \(rounds) drained() calls queued behind a checkout() returned before "
            + "that checkout ran (its offer was taken back by a later withWriter)")
      }
    }
    expectNoBreak(result)
  }

  // MARK: 2. Cancellation of a task whose offer was taken back

  /// Many rounds: a `checkout()` whose task cannot run is offered the writer among
  /// writeNext, `await write`, `writeUnlessCancelled` and `drained()`; a blocked
  /// withWriter takes it back; then the task is cancelled (before it runs, while it waits
  /// at the front behind a held writer, or concurrently with its run). Offered the writer
  /// once, its cancellation has lost: a task cancelled while it waits at the front gets
  /// the proxy once the withWriter ends; every write runs once; the count of waiting
  /// writes ends at 0 and the writer free.
  @Test func cancellingATaskWhoseOfferWasTakenBackNeverLosesOrDoublesAWrite() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(40, "cancelling a task whose offer was taken back")
      guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { exit(0) }
      coaOnThread {
        let a = ThreadSafeSingleWriter(value: 0)
        var expected = 0
        var outcomes: [String: Int] = [:]
        for round in 0..<150 {
          var held: ThreadSafeWriterProxy<Int>? = coaTakeElsewhere(a)
          let executor = ScheduleExecutor()
          let finished = SharedFlag()
          let got = Locked<Bool?>(nil)
          let checkout = Task(executorPreference: executor) {
            do {
              let proxy = try await a.checkout()
              proxy.write += 1_000
              got.withLock { $0 = true }
            } catch {
              got.withLock { $0 = false }
            }
            finished.set()
          }
          coaRun(executor) { a.pendingCount == 1 }
          // The mix, queued behind the checkout.
          a.writeNext { $0.write += 1 }
          let awaitWrite = Task.detached { await a.write { $0 += 1 } }
          let unlessCancelled = Task.detached { () -> Bool in
            (try? await a.writeUnlessCancelled { $0 += 1 }) != nil
          }
          let drain = Task.detached { await a.drained() }
          coaAwait(60, "round \(round): the mix never queued") { coaInboxCount(a) == 5 }
          if round % 4 == 1 { unlessCancelled.cancel() }
          let wDone = DispatchSemaphore(value: 0)
          let inW = SharedFlag()
          let releaseW = SharedFlag()
          Thread.detachNewThread {
            a.withWriter {
              $0 += 1
              // Case 1 holds W's turn until the task has waited again and been cancelled.
              if round % 3 == 1 {
                inW.set()
                _ = eventually(atMost: 60) { releaseW.isSet }
              }
            }
            wDone.signal()
          }
          coaAwait(60, "round \(round): W never queued") { coaInboxCount(a) == 6 }
          held = nil
          _ = held
          if round % 3 == 1 {
            coaAwait(60, "round \(round): W never took back the unclaimed offer") { inW.isSet }
          } else if wDone.wait(timeout: .now() + 60) == .timedOut {
            atkEnd(breakingIf: true, "round \(round): W never took back the unclaimed offer")
          }
          expected += 3  // writeNext, await write, withWriter
          switch round % 3 {
          case 0:
            // Cancelled before it runs: it runs, finds its claim failed, and may take a
            // free writer (then it checks out) or throw; either is allowed.
            checkout.cancel()
            coaRun(executor) { finished.isSet }
          case 1:
            // W still runs in its place: the task's claim fails and it waits again, its
            // entry at the front; cancelled there, it has lost all the same, and gets the
            // proxy once W ends, before the write queued behind it.
            coaRun(executor) { finished.isSet || coaFrontCheckoutWaits(a) }
            if finished.isSet {
              atkEnd(breakingIf: true, "round \(round): the task finished behind a held writer")
            }
            a.writeNext { $0.write += 1 }  // behind the checkout's entry
            expected += 1
            checkout.cancel()
            releaseW.set()
            wDone.wait()
            coaRun(executor) { finished.isSet }
            if got.withLock({ $0 }) != true {
              atkEnd(
                breakingIf: true,
                "round \(round): offered the writer once, then cancelled, it did not check out")
            }
          default:
            // Cancelled from another thread while it runs.
            let canceller = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
              usleep(UInt32.random(in: 0...50))
              checkout.cancel()
              canceller.signal()
            }
            coaRun(executor) { finished.isSet }
            canceller.wait()
          }
          blockUntilDone(awaitWrite)
          let unlessRan = { () -> Bool in
            let done = DispatchSemaphore(value: 0)
            let ran = Locked(false)
            Task {
              let value = await unlessCancelled.value
              ran.withLock { $0 = value }
              done.signal()
            }
            done.wait()
            return ran.withLock { $0 }
          }()
          blockUntilDone(drain)
          if unlessRan { expected += 1 }
          let gotIt = got.withLock { $0 }!
          if gotIt { expected += 1_000 }
          outcomes["case \(round % 3): \(gotIt ? "checked out" : "threw")", default: 0] += 1
          coaAwait(60, "round \(round): not settled: queued \(a.queuedWrites)") {
            a.queuedWrites == 0 && a.pendingCount == 0
          }
          if a.read != expected {
            atkEnd(breakingIf: true, "round \(round): value \(a.read), expected \(expected)")
          }
          coaAwait(60, "round \(round): the writer is not free") { a.writer != nil }
        }
        attackErr("outcomes: \(outcomes)\n")
        atkEnd(breakingIf: false)
      }
    }
    expectNoBreak(result)
  }

  // MARK: 3. Offers taken back, or claimed, on a loaded machine

  /// Rounds of checkouts from ordinary tasks (which claim when the loaded pool gets to
  /// them), with the pool and other threads blocked in `withWriter`, a stream of
  /// `writeNext` with slow bodies, and `await write`s: each round's calls all return, and
  /// every write has run once when they have (Quiescence, No loss).
  @Test func checkoutsAmongBlockedWithWritersOnALoadedPoolLoseNothing() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(40, "checkouts among blocked withWriters")
      let a = ThreadSafeSingleWriter(value: 0)
      let queued = Counter()
      let stream = Repeating(threads: 2) {
        a.writeNext { proxy in
          attackSpin(UInt64.random(in: 0...100_000))
          proxy.write += 1
        }
        queued.add(1)
        attackSpin(UInt64.random(in: 0...300_000))
      }
      let checkedOut = Counter()
      let otherWrites = Counter()
      let start = attackNow()
      var rounds = 0
      // Two seconds: two threads spin through it, and the suites beside it need the cores.
      while attackNow() - start < 2_000_000_000 {
        rounds += 1
        await withTaskGroup(of: Void.self) { group in
          for index in 0..<12 {
            group.addTask {
              switch index % 4 {
              case 0:
                if let proxy = try? await a.checkout() {
                  proxy.write += 1_000_000
                  checkedOut.add(1)
                }
              case 1:
                await a.write { $0 += 1 }
                otherWrites.add(1)
              default:
                a.withWriter { $0 += 1 }
                otherWrites.add(1)
              }
            }
          }
          let threads = DispatchGroup()
          for _ in 0..<3 {
            threads.enter()
            Thread.detachNewThread {
              a.withWriter { $0 += 1 }
              otherWrites.add(1)
              threads.leave()
            }
          }
          await group.waitForAll()
          await withCheckedContinuation { continuation in
            threads.notify(queue: .global()) { continuation.resume() }
          }
        }
      }
      stream.stop()
      await a.drained()
      let value = a.read
      let expected = checkedOut.load() * 1_000_000 + otherWrites.load() + queued.load()
      attackErr("rounds \(rounds), checkouts \(checkedOut.load()), value \(value)\n")
      atkEnd(
        breakingIf: value != expected || checkedOut.load() != rounds * 3,
        "value \(value), expected \(expected); checkouts \(checkedOut.load()) of \(rounds * 3)")
    }
    expectNoBreak(result)
  }

  // MARK: 4. Nested containers, a deinit that calls back, an escaping proxy, observers

  /// Two containers, A before B always: a `checkout()` of A whose proxy goes to another
  /// task, which writes B while holding it; an A closure write that frees an object whose
  /// deinit writes B; withWriters on A behind queued checkouts (their offers taken back
  /// when the tasks are slow); `changes()` consumers on both. Every value a consumer sees
  /// is at least the last one it saw, each consumer reaches the final value, and both
  /// totals are exact.
  @Test func nestedContainersEscapingProxiesAndDeinitsWithObserversLoseNothing() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(40, "nested containers with observers")
      let a = ThreadSafeSingleWriter(value: 0)
      let b = ThreadSafeSingleWriter(value: 0)
      let rounds = 300
      // Per round: A +1 (escaped checkout) +1 (withWriter) +1 (writeNext) +1 (thread W);
      // B +1 (inside the escaped checkout) +1 (deinit) +1 (thread W's nested write).
      let finalA = rounds * 4
      let finalB = rounds * 3
      let regressions = Counter()
      let reachedA = SharedFlag()
      let reachedB = SharedFlag()
      let consumerA = Task.detached {
        var last = -1
        for await value in a.changes() {
          if value < last { regressions.add(1) }
          last = value
          if value == finalA {
            reachedA.set()
            return
          }
        }
      }
      let consumerB = Task.detached {
        var last = -1
        for await value in b.changes() {
          if value < last { regressions.add(1) }
          last = value
          if value == finalB {
            reachedB.set()
            return
          }
        }
      }
      for _ in 0..<rounds {
        let threadDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
          a.withWriter { value in
            value += 1
            b.withWriter { $0 += 1 }  // A then B
          }
          threadDone.signal()
        }
        await withTaskGroup(of: Void.self) { group in
          group.addTask {
            guard let proxy = try? await a.checkout() else { return }
            // The proxy escapes to another task, which holds A while it writes B.
            let escaped = Task.detached {
              proxy.write += 1
              await b.write { $0 += 1 }
            }
            await escaped.value
          }
          group.addTask {
            a.withWriter { value in
              value += 1
              // Freed inside A's write: its deinit writes B (A then B).
              _ = B2(b)
            }
          }
          group.addTask { a.writeNext { $0.write += 1 } }
        }
        threadDone.wait()
      }
      await a.drained()
      await b.drained()
      let gotA = a.read
      let gotB = b.read
      let reached = eventually(atMost: 60) { reachedA.isSet && reachedB.isSet }
      consumerA.cancel()
      consumerB.cancel()
      attackErr("nested: A \(gotA), B \(gotB), reached \(reached)\n")
      atkEnd(
        breakingIf: gotA != finalA || gotB != finalB || !reached || regressions.load() != 0,
        "A \(gotA)/\(finalA), B \(gotB)/\(finalB), consumers reached final: A "
          + "\(reachedA.isSet) B \(reachedB.isSet), regressions \(regressions.load())")
    }
    expectNoBreak(result)
  }

  // MARK: 5. Observed closure writes racing subscribers that come and go

  /// withWriter and tryWrite on several threads while other threads make `changes()`
  /// streams and drop them (some after taking a value): once no stream lives, the
  /// container is unobserved (no subscriber, no `observed` or `dirty` bit); a consumer that
  /// lives through it all sees values that never go back and ends on the final value; and a
  /// consumer that arrives last sees the last write.
  @Test func observedClosureWritesRacingSubscribersEndUnobservedAndDeliverTheFinalValue()
    async
  {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(40, "observed closure writes and subscriber churn")
      let a = ThreadSafeSingleWriter(value: 0)
      for round in 0..<20 {
        let base = a.read
        let writesPerThread = 3_000
        let writers = 3
        let tried = Counter()
        let stopChurn = SharedFlag()
        let churnDone = DispatchGroup()
        for index in 0..<2 {
          churnDone.enter()
          Thread.detachNewThread {
            var kept: [ThreadSafeSingleWriter<Int>.Changes<Int>] = []
            while !stopChurn.isSet {
              let stream = a.changes()
              if index == 0 {
                // Dropped at once, on this thread.
                _ = stream
              } else {
                kept.append(stream)
                if kept.count > 3 || Bool.random() { kept.removeFirst() }
              }
              attackSpin(UInt64.random(in: 0...3_000))
            }
            kept.removeAll()
            churnDone.leave()
          }
        }
        // A consumer that takes one value, then drops its stream from another thread.
        let oneShot = Task.detached {
          for _ in 0..<50 {
            var iterator = a.changes().makeAsyncIterator()
            _ = await iterator.next()
          }
        }
        // A consumer that lives through the round.
        let final = base + writers * writesPerThread
        let regressions = Counter()
        let lastSeen = Counter(-1)
        let consumer = Task.detached {
          var last = -1
          for await value in a.changes() {
            if value < last { regressions.add(1) }
            last = value
            lastSeen.store(value)
            if value >= final { return }
          }
        }
        let writersDone = DispatchGroup()
        for index in 0..<writers {
          writersDone.enter()
          Thread.detachNewThread {
            var left = writesPerThread
            while left > 0 {
              if index == 0 {
                if a.tryWrite({ $0 += 1 }) != nil {
                  left -= 1
                } else {
                  tried.add(1)
                }
              } else {
                a.withWriter { $0 += 1 }
                left -= 1
              }
            }
            writersDone.leave()
          }
        }
        writersDone.wait()
        stopChurn.set()
        churnDone.wait()
        await oneShot.value
        let reached = eventually(atMost: 60) { lastSeen.load() >= final }
        consumer.cancel()
        await consumer.value
        if a.read != final {
          atkEnd(breakingIf: true, "round \(round): value \(a.read - base), not \(final - base)")
        }
        if !reached || regressions.load() != 0 {
          atkEnd(
            breakingIf: true,
            "round \(round): the live consumer saw \(lastSeen.load() - base) of \(final - base), "
              + "regressions \(regressions.load())")
        }
        // No stream lives now.
        let unobserved = eventually(atMost: 60) {
          a.subscriberCount == 0 && !a.isObserved && !a.lock.word.isDirty
        }
        if !unobserved {
          atkEnd(
            breakingIf: true,
            "round \(round): no stream lives, yet subscribers \(a.subscriberCount), observed "
              + "\(a.isObserved), dirty \(a.lock.word.isDirty), word \(a.lock.word)")
        }
        // A late consumer sees the last write.
        let late = a.changes()
        let lateSaw = Locked<Int?>(nil)
        let lateConsumer = Task.detached {
          for await value in late {
            lateSaw.withLock { $0 = value }
            if value == final + 1 { return }
          }
        }
        await Task.detached { a.withWriter { $0 += 1 } }.value
        if !eventually(atMost: 5, { lateSaw.withLock { $0 } == final + 1 }) {
          atkEnd(
            breakingIf: true,
            "round \(round): a late consumer saw \(String(describing: lateSaw.withLock { $0 })), "
              + "not the last write \(final + 1)")
        }
        lateConsumer.cancel()
        await lateConsumer.value
      }
      atkEnd(breakingIf: false)
    }
    expectNoBreak(result)
  }
}

/// Writes `b` from its deinit (a `CallsBack` for any container of Int).
final class B2: Sendable {
  let b: ThreadSafeSingleWriter<Int>
  init(_ b: ThreadSafeSingleWriter<Int>) { self.b = b }
  deinit { b.withWriter { $0 += 1 } }
}
