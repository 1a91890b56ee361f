import Foundation
import Testing

@testable import SingleWriter

// A value whose `deinit` calls back into its container. A transaction's commit swaps the
// body's copy in; the value from before is freed. The sync form frees it once the
// checkout has ended, so a `deinit` there may wait for the writer. The async form must do
// the same: the value from before is not the body's, and a wait for the writer from its
// `deinit` is no self-write inside the body. A throwing body's copy is freed the same way.

/// Calls `onDeinit` when freed.
final class AtkCallsBack: Sendable {
  let onDeinit: @Sendable () -> Void
  init(_ onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
  deinit { onDeinit() }
}

struct AtkWithToken: Sendable {
  var count = 0
  var token: AtkCallsBack?
}

@Suite(.serialized) struct AttackPassDeinitAtCommit {
  /// The sync form: the old token's `deinit` runs `withWriter` on the container.
  @Test func aSyncCommitFreesTheValueFromBeforeOutsideTheCheckout() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "a deinit at a sync commit")
      let box = ThreadSafeSingleWriter(value: AtkWithToken())
      box.withWriter { $0.token = AtkCallsBack { box.withWriter { $0.count += 100 } } }
      box.transaction { value in
        value.count += 1
        value.token = nil  // the old token dies with the value from before
      }
      atkEnd(breakingIf: box.read.count != 101, "count \(box.read.count)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// The async form, the same program.
  @Test func anAsyncCommitFreesTheValueFromBeforeOutsideTheCheckout() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "a deinit at an async commit")
      let box = ThreadSafeSingleWriter(value: AtkWithToken())
      box.withWriter { $0.token = AtkCallsBack { box.withWriter { $0.count += 100 } } }
      try? await box.transaction { value in
        await Task.yield()
        value.count += 1
        value.token = nil
      }
      atkEnd(breakingIf: box.read.count != 101, "count \(box.read.count)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// A throwing async body's copy holds the only reference to a token the body made:
  /// freed when the transaction ends, its `deinit` may write the container.
  @Test func aThrowingAsyncBodysCopyIsFreedOutsideTheCheckout() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "a deinit of a thrown-away async draft")
      let box = ThreadSafeSingleWriter(value: AtkWithToken())
      _ = try? await box.transaction { (value: inout AtkWithToken) async throws -> Void in
        await Task.yield()
        value.token = AtkCallsBack { box.withWriter { $0.count += 100 } }
        throw CancellationError()
      }
      atkEnd(breakingIf: box.read.count != 100, "count \(box.read.count)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }

  /// The same for a throwing sync body.
  @Test func aThrowingSyncBodysCopyIsFreedOutsideTheCheckout() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "a deinit of a thrown-away sync draft")
      let box = ThreadSafeSingleWriter(value: AtkWithToken())
      _ = try? box.transaction { (value: inout AtkWithToken) throws(CancellationError) -> Void in
        value.token = AtkCallsBack { box.withWriter { $0.count += 100 } }
        throw CancellationError()
      }
      atkEnd(breakingIf: box.read.count != 100, "count \(box.read.count)")
    }
    expectNoBreak(result)
    expectExit(result, 0)
  }
}
