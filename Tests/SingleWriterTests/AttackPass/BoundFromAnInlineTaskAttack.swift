import Foundation
import Testing

@testable import SingleWriter

// Promise "The backlog is bounded": a bounded `writeNext` never waits for room that only
// it could make. A `Task.immediate` started by the task that holds the checkout runs
// inline, inside that task's call: only the holder's release makes room, and it cannot
// come until the inline task returns.

@Suite struct AttackPassBoundFromAnInlineTask {
  /// The holder task starts a `Task.immediate` that calls `writeNext` on the full backlog:
  /// it queues past the bound. It waited for room forever.
  @Test func aBoundedWriteNextFromAnInlineTaskOfTheHolderTaskQueuesPastTheBound() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a bounded writeNext from the holder task's Task.immediate")
      guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { exit(0) }
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let queued = await Task.detached { () -> Int in
        let proxy = a.writer!
        writeNextFromAnotherThread(a) { $0.write += 1 }  // the backlog is full now
        let seen = Locked(0)
        Task.immediate {
          a.writeNext { $0.write += 1 }  // no room until this task's holder lets go
          seen.withLock { $0 = a.queuedWrites }
        }
        withExtendedLifetime(proxy) {}
        return seen.withLock { $0 }
      }.value
      await a.drained()
      atkEnd(breakingIf: queued != 2 || a.read != 2, "queued \(queued), read \(a.read)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// Isolated to an actor, the inline task runs like any job of that actor, which no look
  /// can tell apart: it waits for room, as documented, and says so after a second rather
  /// than hanging silently.
  @Test func aBoundedWriteNextFromAnActorIsolatedInlineTaskOfTheHolderWarns() async {
    let result = await #expect(
      processExitsWith: atkExpect(.exitCode(3)), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(6, "a bounded writeNext from the holder's actor-isolated Task.immediate")
      guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
        attackErr("has waited 1 s for room (no Task.immediate here)\n")
        exit(3)
      }
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      await AtkInlineHolder().holdAndProduceInline(a)
      exit(0)
    }
    #expect(standardError(result).contains("has waited 1 s for room"), "\(exitReport(result))")
  }

  /// The control: from a holder thread's `Task.immediate`, the same queues past the bound.
  @Test func aBoundedWriteNextFromAnInlineTaskOfTheHolderThreadQueuesPastTheBound() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "a bounded writeNext from the holder thread's Task.immediate")
      guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { exit(0) }
      let a = ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 1)
      let queued = atkOnFreshThread { () -> Int in
        let proxy = a.writer!
        writeNextFromAnotherThread(a) { $0.write += 1 }
        let seen = Locked(0)
        Task.immediate {
          a.writeNext { $0.write += 1 }
          seen.withLock { $0 = a.queuedWrites }
        }
        withExtendedLifetime(proxy) {}
        return seen.withLock { $0 }
      }
      await a.drained()
      atkEnd(breakingIf: queued != 2 || a.read != 2, "queued \(queued), read \(a.read)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}

/// An actor whose task holds a container's writer and starts a `Task.immediate`, which
/// inherits the actor's isolation.
actor AtkInlineHolder {
  @available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *)
  func holdAndProduceInline(_ a: ThreadSafeSingleWriter<Int>) {
    let proxy = a.writer!
    writeNextFromAnotherThread(a) { $0.write += 1 }  // the backlog is full now
    Task.immediate {
      a.writeNext { $0.write += 1 }  // waits for room this actor's task alone can make
    }
    withExtendedLifetime(proxy) {}
  }
}
