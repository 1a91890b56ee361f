import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

// Hostile tests of holder identity: who the checkout's holder is recorded as
// (`checkoutThread`, `checkoutTask`) when proxies move between threads and tasks, and
// when a thread or task that took one ends while the proxy lives on.

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
  /// `isAccessing` counts the access as this thread's only if `checkoutTask` is 0 or the
  /// current task: here it is the (ended) task that took the proxy, so the wait is taken
  /// for another task's suspended access, and it hangs, silently.
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
      var attempts = 0
      while attempts < 2_000 {
        attempts += 1
        let attempt = attempts
        let drained = await atkInFreshTask { () -> (ThreadSafeWriterProxy<Int>?, UInt) in
          guard UInt(sw_current_task()) == stale else { return (nil, 0) }
          attackErr("the id came back on attempt \(attempt)\n")
          await a.drained()
          return (nil, 1)
        }
        if drained.1 == 1 { break }
      }
      attackErr("attempts: \(attempts)\n")
      guard attempts < 2_000 else {
        // Nothing to tell apart: no later task was given that id this time (chaos mode's
        // timing can keep the memory), which is what this test needs in order to check.
        attackErr("no task reused the id in 2,000 attempts\n")
        exit(0)
      }
      exit(0)
    }
    expectExit(result, 0)
    #expect(
      !standardError(result).contains("drained() in a task that holds"), "\(exitReport(result))")
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
      var attempts = 0
      while attempts < 2_000 {
        attempts += 1
        let wrote = await atkInFreshTask { () -> (ThreadSafeWriterProxy<Int>?, UInt) in
          guard UInt(sw_current_task()) == stale else { return (nil, 0) }
          await a.write { $0 += 1 }
          return (nil, 1)
        }
        if wrote.1 == 1 { break }
      }
      guard attempts < 2_000 else {
        // Nothing to tell apart: no later task was given that id this time (chaos mode's
        // timing can keep the memory), which is what this test needs in order to check.
        attackErr("no task reused the id in 2,000 attempts\n")
        exit(0)
      }
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
      var attempts = 0
      var most = 0
      while attempts < 2_000 {
        attempts += 1
        let seen = await atkInFreshTask { () -> (ThreadSafeWriterProxy<Int>?, UInt) in
          guard UInt(sw_current_task()) == stale else { return (nil, 0) }
          // Must wait for room: let the proxy go in 1 s, so it gets some.
          releaseLater(held, after: 1)
          a.writeNext { $0.write += 1 }
          return (nil, UInt(a.queuedWrites) + 1)
        }
        if seen.1 != 0 {
          most = Int(seen.1) - 1
          break
        }
      }
      guard attempts < 2_000 else {
        // Nothing to tell apart: no later task was given that id this time (chaos mode's
        // timing can keep the memory), which is what this test needs in order to check.
        attackErr("no task reused the id in 2,000 attempts\n")
        exit(0)
      }
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
      var attempts = 0
      var most = 0
      while attempts < 2_000 {
        attempts += 1
        let seen = atkOnFreshThread { () -> Int in
          guard sw_current_thread() == stale else { return -1 }
          releaseLater(held, after: 1)
          a.writeNext { $0.write += 1 }
          return a.queuedWrites
        }
        if seen >= 0 {
          most = seen
          break
        }
        usleep(1_000)
      }
      attackErr("attempts: \(attempts)\n")
      guard attempts < 2_000 else {
        // Nothing to tell apart: no later thread was given that id this time (chaos mode's
        // timing can keep the memory), which is what this test needs in order to check.
        attackErr("no thread reused the id in 2,000 attempts\n")
        exit(0)
      }
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
      var attempts = 0
      while attempts < 2_000 {
        attempts += 1
        let hit = atkOnFreshThread { () -> Bool in
          guard sw_current_thread() == stale else { return false }
          releaseLater(held, after: 2.5)
          a.withWriter { $0 += 1 }
          return true
        }
        if hit { break }
        usleep(1_000)
      }
      guard attempts < 2_000 else {
        // Nothing to tell apart: no later thread was given that id this time (chaos mode's
        // timing can keep the memory), which is what this test needs in order to check.
        attackErr("no thread reused the id in 2,000 attempts\n")
        exit(0)
      }
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
  /// its access and releases the proxy). `checkoutTask` is 0 for a proxy taken outside a
  /// task, so `isAccessing` takes the access for this thread's own and stops the wait.
  @Test func withWriterFromAnotherTaskOnTheThreadOfASuspendedAccessThroughAPlainThreadsProxyWaits()
    async
  {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "withWriter by another task on the access's thread")
      let a = ThreadSafeSingleWriter(value: AtkCounter())
      var landed = 0
      for _ in 0..<20 {
        let held = Locked(atkOnFreshThread { a.writer })
        let started = Locked<UInt>(0)
        let gate = Locked<CheckedContinuation<Void, Never>?>(nil)
        let first = Task {
          let proxy = held.withLock { $0.take() }!
          await proxy.write.bumpAcross(started, gate)
        }
        while gate.withLock({ $0 }) == nil { try? await Task.sleep(nanoseconds: 100_000) }
        let thread = started.withLock { $0 }
        let landedHere = Locked(false)
        let deadline = attackNow() + 1_000_000_000
        while !landedHere.withLock({ $0 }), attackNow() < deadline {
          await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
              group.addTask {
                guard atkThreadID() == thread,
                  landedHere.withLock({ old in
                    defer { old = true }
                    return !old
                  })
                else { return }
                let resume = gate.withLock { $0.take() }!
                Thread.detachNewThread {
                  atkSleep(0.02)
                  resume.resume()
                }
                a.withWriter { $0.n += 100 }
              }
            }
          }
        }
        if landedHere.withLock({ $0 }) {
          landed += 1
        } else {
          gate.withLock { $0.take() }?.resume()
        }
        await first.value
      }
      attackErr("probes that landed on the access's thread: \(landed)\n")
      exit(0)
    }
    #expect(
      !standardError(result).contains("inside a write access through a proxy"),
      "\(exitReport(result))")
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
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
