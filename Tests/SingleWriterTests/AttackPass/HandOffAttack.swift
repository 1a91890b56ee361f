import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Promises "A release pays its debts", "No loss", "Cancellation", "A woken checkout
// claims": owed follow-ups, task entries that never serve, and a checkout() handed the
// writer its own enqueue took.

@Suite struct AttackPassHandOff {
  /// A `checkout()` queued ahead of another thread's `writeNext`: the release wakes the
  /// task, which takes the writer; the writeNext runs when that checkout ends ("No loss",
  /// "FIFO"). The release owes it nothing: another thread queued it ("A release pays its
  /// debts"). (The attack pass read the older promise, that a release ran every write
  /// queued before it, and found it broken here.)
  @Test func aWriteQueuedBehindACheckoutRunsWhenThatCheckoutEnds() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "release with a checkout queued")
      await atkExpectAWriteBehind("checkout") { a in
        let task = Task {
          let proxy = try await a.checkout()
          atkSleep(0.3)
          proxy.write += 10
        }
        return { _ = try? await task.value }
      }
    }
    expectNoBreak(result)
  }

  /// The same with a blocked withWriter queued ahead of the writeNext.
  @Test func aWriteQueuedBehindAWaiterRunsWhenThatWaiterEnds() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "release with a waiter queued")
      await atkExpectAWriteBehind("waiter") { a in  // it queues after a millisecond
        let waiterDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
          a.withWriter { value in
            atkSleep(0.3)
            value += 10
          }
          waiterDone.signal()
        }
        return { waiterDone.wait() }
      }
    }
    expectNoBreak(result)
  }

  /// Deep chains of follow-ups, among cancelled task entries and another thread's stream
  /// of writes (so that successors are wanted): every release returns ("Serving is
  /// bounded"), and every chain has run once every call has returned ("Quiescence").
  ///
  /// The attack pass found that a release owing the follow-ups of the writes it served
  /// never returned here: each link went to the back, behind the stream, so the debt grew
  /// faster than it was paid. A release now owes only its own thread's writes.
  @Test func releasesReturnAndChainsOfFollowUpsRunAmongCancelledTasksAndAStream() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(60, "chains of follow-ups")
      let a = ThreadSafeSingleWriter(value: 0)
      let stream = Repeating {
        a.writeNext { proxy in
          attackSpin(5_000)
          proxy.write += 0
        }
        attackSpin(2_000)
      }
      var depths: [Locked<Int>] = []
      for round in 0..<200 {
        let depth = Locked(0)
        depths.append(depth)
        // checkout(), not `writer`: a stream of writes keeps the writer busy, and only a
        // queued wait is sure to get it.
        var held: ThreadSafeWriterProxy<Int>? = try! await a.checkout()
        if round % 10 == 0 { attackErr("round \(round) at \(attackNow() / 1_000_000) ms\n") }
        // Cancelled entries in the queue.
        var tasks: [Task<Void, Never>] = []
        for index in 0..<3 {
          tasks.append(
            Task {
              if index % 2 == 0 {
                _ = try? await a.checkout()
              } else {
                try? await a.writeUnlessCancelled { $0 += 0 }
              }
            })
        }
        let queued = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
          atkChain(a, 30, depth)
          queued.signal()
        }
        queued.wait()
        try? await Task.sleep(nanoseconds: 200_000)
        for task in tasks { task.cancel() }
        try? await Task.sleep(nanoseconds: 200_000)
        held = nil  // the release returns, on borrowed time for the chain
        _ = held
        for task in tasks { await task.value }
      }
      stream.stop()
      a.withWriter { _ in }
      let short = depths.filter { $0.withLock { $0 } != 31 }.count
      atkEnd(breakingIf: short > 0, "\(short) of 200 chains had not run once every call returned")
    }
    expectNoBreak(result)
  }

  /// A checkout() that takes the free writer on its enqueue, raced by cancellation and by
  /// other threads' writeNext: nothing hangs, no write is lost, and the writer ends free.
  @Test func cancellationRacingACheckoutThatTookTheFreeWriter() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(60, "cancellation racing takeOwnEntry")
      let a = ThreadSafeSingleWriter(value: 0)
      let queuedWrites = Counter()
      let stream = Repeating {
        a.writeNext { $0.write += 1 }
        queuedWrites.add(1)
        attackSpin(UInt64.random(in: 0...20_000))
      }
      var got = 0
      var cancelled = 0
      for _ in 0..<3_000 {
        let task = checkoutTask(a, adding: 1_000_000)
        if Bool.random() { await Task.yield() }
        task.cancel()
        if await task.value { got += 1 } else { cancelled += 1 }
      }
      stream.stop()
      a.withWriter { _ in }
      let value = a.read { $0 }
      let expected = queuedWrites.load() + got * 1_000_000
      attackErr("checkouts \(got), cancelled \(cancelled), value \(value), expected \(expected)\n")
      if a.writer == nil { atkEnd(breakingIf: true, "the writer is not free at the end") }
      atkEnd(breakingIf: value != expected, "lost or doubled writes")
    }
    expectNoBreak(result)
  }

  /// An `await write` or `checkout()` never serves others' writes on its thread before
  /// its own body ran / before it suspends: a body queued by another thread must never run
  /// on a thread while that thread's task is inside its enqueue.
  @Test func taskEntriesNeverServeOthersBeforeTheirOwnTurn() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(60, "task entries as servers")
      let a = ThreadSafeSingleWriter(value: 0)
      // Tasks inside an async write call, before their body ran. Tasks, not threads: a
      // task's thread runs other tasks while it is suspended, and one of them, handed the
      // checkout with its result by a late server, serves after its own body ran.
      let waitingThreads = Locked(Set<UInt>())
      let violations = Counter()
      let stream = Repeating {
        a.writeNext { proxy in
          if waitingThreads.withLock({ $0.contains(sw_current_holder()) }) { violations.add(1) }
          attackSpin(20_000)
          proxy.write += 1
        }
        attackSpin(5_000)
      }
      await withTaskGroup(of: Void.self) { group in
        for _ in 0..<4 {
          group.addTask {
            for _ in 0..<500 {
              let me = sw_current_holder()
              waitingThreads.withLock { _ = $0.insert(me) }
              await a.write { value in
                waitingThreads.withLock { _ = $0.remove(me) }
                value += 1
              }
              waitingThreads.withLock { _ = $0.remove(me) }
            }
          }
        }
      }
      stream.stop()
      let count = violations.load()
      atkEnd(
        breakingIf: count > 0,
        "\(count) bodies of another thread ran in a task inside await write")
    }
    expectNoBreak(result)
  }
}

/// In a child: `queueAhead` starts a wait for `a`'s writer, which this thread holds (the
/// wait adds 10 once it has the writer), and returns how to wait for that wait's end; once
/// it has queued, another thread queues a write that adds 1, and this thread releases. Ends
/// the child with a BREAK unless that write has run once the wait ahead of it has ended.
func atkExpectAWriteBehind(
  _ what: String, _ queueAhead: (ThreadSafeSingleWriter<Int>) -> () async -> Void
) async -> Never {
  let a = ThreadSafeSingleWriter(value: 0)
  var held = a.writer
  let ended = queueAhead(a)
  precondition(eventually { a.pendingCount == 1 }, "the \(what) never queued")
  let ran = SharedFlag()
  writeNextFromAnotherThread(a) { proxy in
    proxy.write += 1
    ran.set()
  }
  held = nil
  _ = held
  await ended()
  a.withWriter { _ in }
  atkEnd(
    breakingIf: !ran.isSet || a.read != 11,
    "the writeNext had not run once the \(what) ahead of it ended")
}
