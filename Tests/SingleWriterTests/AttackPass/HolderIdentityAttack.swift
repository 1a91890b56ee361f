import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Hostile tests of holder identity: who the checkout's holder, and a write access's
// maker, are recorded as (`checkoutHolder`, `writingThread`) when proxies move between
// threads and tasks, and when a thread or task that took one ends while the proxy lives
// on. Each failed when the holder was recorded by thread and task addresses.

/// Runs `body` in a fresh detached task: every call makes a task of the same shape, so a
/// task that ended may leave its memory, and so its id, to the next one.
func atkInFreshTask<R: Sendable>(_ body: @escaping @Sendable () async -> R) async -> R {
  await Task.detached { await body() }.value
}

/// Runs `body` on a fresh plain thread (no task), of one fixed stack size, and waits for
/// it to return.
func atkOnFreshThread<R: Sendable>(_ body: @escaping @Sendable () -> R) -> R {
  let done = DispatchSemaphore(value: 0)
  let result = Locked<R?>(nil)
  let thread = Thread {
    result.withLock { $0 = body() }
    done.signal()
  }
  thread.stackSize = 1 << 20
  thread.start()
  done.wait()
  return result.withLock { $0! }
}

/// Takes `a`'s writer in a fresh task, which then ends: returns the proxy, in a box only
/// the caller holds, and that task's id.
func atkWriterFromAnEndedTask(
  _ a: ThreadSafeSingleWriter<Int>
) async -> (Locked<ThreadSafeWriterProxy<Int>?>, UInt) {
  let (proxy, stale) = await atkInFreshTask { () -> (ThreadSafeWriterProxy<Int>?, UInt) in
    (a.writer!, UInt(sw_current_task()))
  }
  return (Locked(proxy), stale)
}

/// Takes `a`'s writer on a fresh plain thread, which then exits: returns the proxy, in a
/// box only the caller holds, and that thread's id.
func atkWriterFromAnExitedThread(
  _ a: ThreadSafeSingleWriter<Int>
) -> (Locked<ThreadSafeWriterProxy<Int>?>, UInt) {
  let (proxy, stale) = atkOnFreshThread { () -> (ThreadSafeWriterProxy<Int>?, UInt) in
    (a.writer!, sw_current_thread())
  }
  return (Locked(proxy), stale)
}

/// Runs `body` in the first of up to 2,000 fresh tasks that the runtime gives the address
/// `stale`, and returns what it returns; nil if none was given it (chaos mode's timing can
/// keep the memory): then there is nothing to tell apart (see `atkNothingReused`).
func atkInATaskGiven<R: Sendable>(
  theAddress stale: UInt, _ body: @escaping @Sendable () async -> R
) async -> R? {
  for attempt in 1...2_000 {
    let result = await atkInFreshTask { () -> R? in
      guard UInt(sw_current_task()) == stale else { return nil }
      return await body()
    }
    if let result {
      attackErr("the address came back on attempt \(attempt)\n")
      return result
    }
  }
  return nil
}

/// `atkInATaskGiven(theAddress:_:)` for fresh threads given the id `stale`.
func atkOnAThreadGiven<R: Sendable>(theID stale: UInt, _ body: @escaping @Sendable () -> R) -> R? {
  for attempt in 1...2_000 {
    let result = atkOnFreshThread { () -> R? in
      guard sw_current_thread() == stale else { return nil }
      return body()
    }
    if let result {
      attackErr("the id came back on attempt \(attempt)\n")
      return result
    }
    usleep(1_000)
  }
  return nil
}

/// Ends a child whose test needs a reused id that no task or thread was given: nothing to
/// tell apart this time, so nothing to check.
func atkNothingReused() -> Never {
  attackErr("no task or thread was given the id in 2,000 attempts\n")
  exit(0)
}

/// Calls `body` during an inout access to `value`.
func atkDuringAccess(_ value: inout Int, _ body: () -> Void) {
  value += 1
  body()
}

@Suite struct AttackPassHolderIdentity {
  // MARK: An escaped task proxy, accessed on a plain thread

  /// Promise "No wait inside a write": withWriter inside a write access through a proxy,
  /// on the same thread, stops with a message. A task takes `writer`; the proxy goes to
  /// a plain thread (no task), which calls withWriter from inside an access through it.
  /// It hung, silently, while `isAccessing` counted an access as this thread's only if the
  /// task that took the proxy was the current one (or none).
  @Test func withWriterInsideAnAccessThroughATaskTakenProxyOnAPlainThreadStops() async {
    let result = await #expect(
      processExitsWith: atkExpect(.failure), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter inside an access through a task's proxy on a plain thread")
      let a = ThreadSafeSingleWriter(value: 0)
      let proxy = await Task.detached { a.writer! }.value
      _ = atkOnFreshThread {
        atkDuringAccess(&proxy.write) { a.withWriter { $0 += 1 } }
        return 0
      }
      exit(0)
    }
    expectStop(result, saying: "inside a write access through a proxy")
  }

  /// The same with a `checkout()` proxy handed to another task, which calls withWriter
  /// inside an access through it.
  @Test func withWriterInsideAnAccessThroughAnotherTasksCheckoutStops() async {
    let result = await #expect(
      processExitsWith: atkExpect(.failure), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter inside an access through another task's checkout")
      let a = ThreadSafeSingleWriter(value: 0)
      let proxy = try! await a.checkout()
      await Task.detached {
        atkDuringAccess(&proxy.write) { a.withWriter { $0 += 1 } }
      }.value
      exit(0)
    }
    expectStop(result, saying: "inside a write access through a proxy")
  }

  // MARK: A task that ended, its proxy alive, its id reused

  /// Promise "drained() stops only in a task that holds a proxy it took": a task takes
  /// `writer` and ends; its proxy lives on in a plain thread, released after 2 s. A new
  /// task, given the ended task's id (its memory), calls `drained()` behind a queued
  /// write: it holds nothing, so it must wait and return. It stops instead.
  @Test func aTaskGivenTheIdOfAnEndedTaskThatTookAProxyMayDrain() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "drained in a task given an ended task's id")
      let a = ThreadSafeSingleWriter(value: 0)
      let (held, stale) = await atkWriterFromAnEndedTask(a)
      releaseLater(held, after: 2)
      writeNextFromAnotherThread(a) { $0.write += 1 }
      guard await atkInATaskGiven(theAddress: stale, { await a.drained() }) != nil else {
        atkNothingReused()
      }
      exit(0)
    }
    expectExit(result, 0)
    // It holds nothing: no stop, and no warning that it holds the checkout.
    #expect(!standardError(result).contains("would wait forever"), "\(exitReport(result))")
    #expect(!standardError(result).contains("this same task"), "\(exitReport(result))")
  }

  /// Promise "True warnings": the same reused task id, and an `await write` behind the
  /// plain thread's proxy: the task is told "this same task" took the checkout.
  @Test(.tags(.realTime)) func aTaskGivenTheIdOfAnEndedTaskIsNotToldItTookTheCheckout() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "await write in a task given an ended task's id")
      let a = ThreadSafeSingleWriter(value: 0)
      let (held, stale) = await atkWriterFromAnEndedTask(a)
      releaseLater(held, after: 2.5)
      guard await atkInATaskGiven(theAddress: stale, { await a.write { $0 += 1 } }) != nil
      else { atkNothingReused() }
      exit(0)
    }
    expectExit(result, 0)
    #expect(!standardError(result).contains("this same task"), "\(exitReport(result))")
  }

  /// Promise "The backlog is bounded": a task given the id of an ended task whose proxy
  /// lives on is not the holder, yet its writeNext queues past the bound.
  @Test func aTaskGivenTheIdOfAnEndedTaskIsHeldBackByTheBound() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "bounded writeNext in a task given an ended task's id")
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let (held, stale) = await atkWriterFromAnEndedTask(a)
      writeNextFromAnotherThread(a) { $0.write += 1 }  // the backlog is full now
      let queued = await atkInATaskGiven(theAddress: stale) { () -> Int in
        // Must wait for room: let the proxy go in 1 s, so it gets some.
        releaseLater(held, after: 1)
        a.writeNext { $0.write += 1 }
        return a.queuedWrites
      }
      guard let most = queued else { atkNothingReused() }
      if most > 1 { atkEnd(breakingIf: true, "queuedWrites \(most) past the bound of 1") }
      exit(0)
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  // MARK: A thread that exited, its proxy alive, its id reused

  /// Promise "The backlog is bounded": a plain thread takes `writer`, hands the proxy on
  /// and exits. A new thread given its id (the thread pointer, reused with its stack) is
  /// not the holder, yet its writeNext on the full backlog queues past the bound.
  @Test func aThreadGivenTheIdOfAnExitedThreadThatTookAProxyIsHeldBackByTheBound() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "bounded writeNext on a thread given an exited thread's id")
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let (held, stale) = atkWriterFromAnExitedThread(a)
      writeNextFromAnotherThread(a) { $0.write += 1 }  // the backlog is full now
      usleep(10_000)
      let queued = atkOnAThreadGiven(theID: stale) { () -> Int in
        releaseLater(held, after: 1)
        a.writeNext { $0.write += 1 }
        return a.queuedWrites
      }
      guard let most = queued else { atkNothingReused() }
      if most > 1 { atkEnd(breakingIf: true, "queuedWrites \(most) past the bound of 1") }
      exit(0)
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// Promise "True warnings": the same reused thread id, and a withWriter behind the
  /// proxy: it is told the proxy was taken "on this same thread".
  @Test(.tags(.realTime)) func aThreadGivenTheIdOfAnExitedThreadIsNotToldItTookTheProxy() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "withWriter on a thread given an exited thread's id")
      let a = ThreadSafeSingleWriter(value: 0)
      let (held, stale) = atkWriterFromAnExitedThread(a)
      usleep(10_000)
      let waited = atkOnAThreadGiven(theID: stale) { () -> Bool in
        releaseLater(held, after: 2.5)
        a.withWriter { $0 += 1 }
        return true
      }
      guard waited != nil else { atkNothingReused() }
      exit(0)
    }
    expectExit(result, 0)
    #expect(!standardError(result).contains("this same thread"), "\(exitReport(result))")
  }
}

extension AttackPassHolderIdentity {
  // MARK: A plain thread's proxy, accessed across a suspension by a task

  /// Promise "No wait inside a write" stops only a wait this thread holds up. A plain
  /// thread (no task) takes `writer` and gives the proxy to a task, which holds a write
  /// access across a suspension; another task, run on the thread where that access
  /// began, calls withWriter: a legitimate wait (the first task resumes elsewhere, ends
  /// its access and releases the proxy). It was stopped while a proxy taken outside any
  /// task made every access on its thread that thread's own.
  @Test func withWriterFromAnotherTaskOnTheThreadOfASuspendedAccessThroughAPlainThreadsProxyWaits()
    async
  {
    let log = atkChildLog()
    let result = await #expect(processExitsWith: atkExpect(.success)) { [log = log as String] in
      atkSendStandardError(to: log)
      attackWatchdog(30, "withWriter by another task on the access's thread")
      let a = ThreadSafeSingleWriter(value: AtkCounter())
      // The proxy is taken on a plain thread, outside any task, and given to the task.
      let landed = await atkProbeTheThreadOfASuspendedAccess(
        a, taking: { await runOnThread(stackSize: 1 << 20) { a.writer! } }
      ) { a.withWriter { $0.n += 100 } }
      attackErr("probes that landed on the access's thread: \(landed)\n")
      exit(0)
    }
    let stderr = atkTakeChildLog(log)
    #expect(!stderr.contains("inside a write access through a proxy"), "\(stderr.suffix(1500))")
    #expect(result != nil, "the child's standard error: \(stderr.suffix(3000))")
  }
}

/// An actor whose jobs run on one thread of its own.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
actor AtkPinned {
  static let executor = OwnThreadExecutor()
  nonisolated var unownedExecutor: UnownedSerialExecutor {
    Self.executor.asUnownedSerialExecutor()
  }
  func run<R: Sendable>(_ body: @Sendable () -> R) -> R { body() }
}

extension AttackPassHolderIdentity {
  // MARK: Hostile tests that passed

  /// A task takes `writer` on the pinned thread and gives the proxy to a plain thread that
  /// holds it 2.5 s; another task on that same pinned thread calls withWriter: it must
  /// not be told "this same thread".
  @Test(.tags(.realTime)) func withWriterFromAnotherTaskOnThePinnedThreadIsNotToldSameThread()
    async
  {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "withWriter on the pinned thread")
      let a = ThreadSafeSingleWriter(value: 0)
      let pinned = AtkPinned()
      let taker = Task.detached { () -> (Locked<ThreadSafeWriterProxy<Int>?>, UInt) in
        await pinned.run { (Locked(a.writer), UInt(sw_current_task())) }
      }
      let (held, takerID) = await taker.value
      releaseLater(held, after: 2.5)
      let waiterID = await Task.detached { () -> UInt in
        await pinned.run { () -> UInt in
          a.withWriter { $0 += 1 }
          return UInt(sw_current_task())
        }
      }.value
      attackErr("taker \(takerID) waiter \(waiterID)\n")
      precondition(a.read == 1)
      exit(0)
    }
    expectExit(result, 0)
    #expect(!standardError(result).contains("this same"), "\(exitReport(result))")
  }

  /// A task takes `writer`, hops to the pinned thread, calls writeNext on a full bounded
  /// backlog (queues past it), hops back and releases on a pool thread: the writes run.
  @Test func aTaskThatHopsThreadsQueuesPastAFullBoundAndItsReleaseRunsTheWrites() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a hopping task on a full bounded backlog")
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let pinned = AtkPinned()
      await Task.detached {
        var proxy = a.writer
        writeNextFromAnotherThread(a) { $0.write += 1 }
        await pinned.run {
          for _ in 0..<5 { a.writeNext { $0.write += 10 } }
        }
        try? await Task.sleep(nanoseconds: 1_000_000)
        proxy = nil
        _ = proxy
      }.value
      await a.drained()
      precondition(a.read == 51, "read \(a.read)")
      exit(0)
    }
    expectExit(result, 0)
  }

  /// The pinned thread's task holds a proxy; a plain non-task job of another task on the
  /// same pinned thread calls writeNext on the full bounded backlog: it must wait (held
  /// back), and go in once the proxy is released elsewhere.
  @Test func anotherTaskOnThePinnedThreadIsHeldBackByTheBound() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "held back")
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let pinned = AtkPinned()
      let taker = Task.detached { () -> (Locked<ThreadSafeWriterProxy<Int>?>, UInt) in
        await pinned.run { (Locked(a.writer), UInt(sw_current_task())) }
      }
      let (held, takerID) = await taker.value
      writeNextFromAnotherThread(a) { $0.write += 1 }
      releaseLater(held, after: 0.5)
      let (most, producerID) = await Task.detached { () -> (Int, UInt) in
        await pinned.run { () -> (Int, UInt) in
          a.writeNext { $0.write += 1 }
          return (a.queuedWrites, UInt(sw_current_task()))
        }
      }.value
      attackErr("taker \(takerID) producer \(producerID)\n")
      precondition(most <= 1, "queuedWrites \(most)")
      await a.drained()
      exit(0)
    }
    expectExit(result, 0)
  }
}

extension AttackPassHolderIdentity {
  // MARK: The same reuse, with no hunting for the id: two tasks one after the other

  /// Promise "The backlog is bounded", in the plainest code: one detached task takes the
  /// writer and hands the proxy back; once it ended, the next detached task (which the
  /// runtime gives the same memory, so the same id) is taken for the holder and its
  /// writeNext goes past the full bound instead of waiting for room.
  @Test func theNextTaskAfterOneThatTookAProxyIsHeldBackByTheBound() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "the next task on a full bounded backlog")
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let held = await Task.detached { Locked(a.writer) }.value
      writeNextFromAnotherThread(a) { $0.write += 1 }  // full
      releaseLater(held, after: 0.5)
      let most = await Task.detached { () -> Int in
        a.writeNext { $0.write += 1 }  // must wait for room until the release
        return a.queuedWrites
      }.value
      if most > 1 { atkEnd(breakingIf: true, "queuedWrites \(most) past the bound of 1") }
      exit(0)
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// Promise "True warnings", in the plainest code: the next detached task's withWriter,
  /// behind a proxy a plain thread holds, is told it was taken "on this same thread or
  /// by this task".
  @Test(.tags(.realTime)) func theNextTaskAfterOneThatTookAProxyIsNotToldItHoldsIt() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "the next task's withWriter")
      let a = ThreadSafeSingleWriter(value: 0)
      let held = await Task.detached { Locked(a.writer) }.value
      releaseLater(held, after: 2.5)
      await Task.detached { a.withWriter { $0 += 1 } }.value
      exit(0)
    }
    expectExit(result, 0)
    #expect(!standardError(result).contains("this same"), "\(exitReport(result))")
  }
}
