import Foundation
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
      let a = ThreadSafeSingleWriter(value: 0)
      var held = a.writer
      let task = Task {
        let proxy = try await a.checkout()
        atkSleep(0.3)
        proxy.write += 10
      }
      atkSleep(0.1)  // the task has queued
      let ran = AtkBox(false)
      let queued = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        a.writeNext { proxy in
          proxy.write += 1
          ran.with { $0 = true }
        }
        queued.signal()
      }
      queued.wait()
      held = nil
      _ = held
      _ = try? await task.value
      a.withWriter { _ in }
      if !ran.with({ $0 }) || a.read != 11 {
        attackErr("BREAK: the writeNext had not run once the checkout ahead of it ended\n")
        exit(1)
      }
      exit(0)
    }
    atkDiag(result)
    #expect(!atkStderr(result).contains("BREAK"), "\(exitReport(result))")
  }

  /// The same with a blocked withWriter queued ahead of the writeNext.
  @Test func aWriteQueuedBehindAWaiterRunsWhenThatWaiterEnds() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "release with a waiter queued")
      let a = ThreadSafeSingleWriter(value: 0)
      var held = a.writer
      let waiterDone = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        a.withWriter { value in
          atkSleep(0.3)
          value += 10
        }
        waiterDone.signal()
      }
      atkSleep(0.1)  // the waiter has joined the queue (after 1 ms)
      let ran = AtkBox(false)
      let queued = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        a.writeNext { proxy in
          proxy.write += 1
          ran.with { $0 = true }
        }
        queued.signal()
      }
      queued.wait()
      held = nil
      _ = held
      waiterDone.wait()
      a.withWriter { _ in }
      if !ran.with({ $0 }) || a.read != 11 {
        attackErr("BREAK: the writeNext had not run once the waiter ahead of it ended\n")
        exit(1)
      }
      exit(0)
    }
    atkDiag(result)
    #expect(!atkStderr(result).contains("BREAK"), "\(exitReport(result))")
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
      let stop = AtkBox(false)
      let streamed = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        while !stop.with({ $0 }) {
          a.writeNext { proxy in
            attackSpin(5_000)
            proxy.write += 0
          }
          attackSpin(2_000)
        }
        streamed.signal()
      }
      var depths: [AtkBox<Int>] = []
      for round in 0..<200 {
        let depth = AtkBox(0)
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
      stop.with { $0 = true }
      streamed.wait()
      a.withWriter { _ in }
      let short = depths.filter { $0.with { $0 } != 31 }.count
      if short > 0 {
        attackErr("BREAK: \(short) of 200 chains had not run once every call returned\n")
        exit(1)
      }
      exit(0)
    }
    atkDiag(result)
    #expect(!atkStderr(result).contains("BREAK"), "\(exitReport(result))")
  }

  /// A checkout() that takes the free writer on its enqueue, raced by cancellation and by
  /// other threads' writeNext: nothing hangs, no write is lost, and the writer ends free.
  @Test func cancellationRacingACheckoutThatTookTheFreeWriter() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(60, "cancellation racing takeOwnEntry")
      let a = ThreadSafeSingleWriter(value: 0)
      let queuedWrites = AtkBox(0)
      let stop = AtkBox(false)
      let streamed = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        while !stop.with({ $0 }) {
          a.writeNext { $0.write += 1 }
          queuedWrites.with { $0 += 1 }
          attackSpin(UInt64.random(in: 0...20_000))
        }
        streamed.signal()
      }
      var got = 0
      var cancelled = 0
      for _ in 0..<3_000 {
        let task = Task { () -> Bool in
          do {
            let proxy = try await a.checkout()
            proxy.write += 1_000_000
            return true
          } catch { return false }
        }
        if Bool.random() { await Task.yield() }
        task.cancel()
        if await task.value { got += 1 } else { cancelled += 1 }
      }
      stop.with { $0 = true }
      streamed.wait()
      a.withWriter { _ in }
      let value = a.read { $0 }
      let expected = queuedWrites.with { $0 } + got * 1_000_000
      attackErr("checkouts \(got), cancelled \(cancelled), value \(value), expected \(expected)\n")
      guard a.writer != nil else {
        attackErr("BREAK: the writer is not free at the end\n")
        exit(1)
      }
      if value != expected {
        attackErr("BREAK: lost or doubled writes\n")
        exit(1)
      }
      exit(0)
    }
    atkDiag(result)
    #expect(!atkStderr(result).contains("BREAK"), "\(exitReport(result))")
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
      // Threads currently inside an async write call, before their body ran.
      let waitingThreads = AtkBox(Set<UInt>())
      let violations = AtkBox(0)
      let stop = AtkBox(false)
      let streamed = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        while !stop.with({ $0 }) {
          a.writeNext { proxy in
            if waitingThreads.with({ $0.contains(atkThreadID()) }) { violations.with { $0 += 1 } }
            attackSpin(20_000)
            proxy.write += 1
          }
          attackSpin(5_000)
        }
        streamed.signal()
      }
      await withTaskGroup(of: Void.self) { group in
        for _ in 0..<4 {
          group.addTask {
            for _ in 0..<500 {
              let me = atkThreadID()
              waitingThreads.with { _ = $0.insert(me) }
              await a.write { value in
                waitingThreads.with { _ = $0.remove(me) }
                value += 1
              }
              waitingThreads.with { _ = $0.remove(me) }
            }
          }
        }
      }
      stop.with { $0 = true }
      streamed.wait()
      let count = violations.with { $0 }
      if count > 0 {
        attackErr("BREAK: \(count) bodies of another thread ran on a thread inside await write\n")
        exit(1)
      }
      exit(0)
    }
    atkDiag(result)
    #expect(!atkStderr(result).contains("BREAK"), "\(exitReport(result))")
  }
}
