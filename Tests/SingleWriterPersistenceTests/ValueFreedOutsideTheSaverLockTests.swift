import Foundation
import SingleWriter
import Testing

@testable import SingleWriterPersistence

/// A value's `deinit` runs where the app can call the store: a value only the saver held
/// (the failed one it keeps for a retry) was freed under the saver's lock when a newer
/// failure replaced it, or a success cleared it, so a `deinit` there that asked for
/// `failures()` (which takes that lock) hung the saver, and every `saved()` after it. It
/// is now freed after the lock, as the container frees a replaced snapshot after its own.
@Suite struct ValueFreedOutsideTheSaverLockTests {
  /// Calls `onFree` from its `deinit`.
  final class Token: Sendable {
    let onFree: @Sendable () -> Void
    init(_ onFree: @escaping @Sendable () -> Void) { self.onFree = onFree }
    deinit { onFree() }
  }

  struct Held: Codable, Sendable {
    var n = 0
    var token: Token?
    enum CodingKeys: CodingKey { case n }
  }

  @Test(arguments: [false, true])
  func aFailedValueIsFreedOutsideTheLock(clearedBySuccess: Bool) async throws {
    let blocker = makeFolder().appendingPathComponent("blocker")
    try Data("not a folder".utf8).write(to: blocker)
    let store = try PersistedState(
      file: blocker.appendingPathComponent("n.json"), default: Held())
    let saver = store.saver
    // Whether the lock was free when the token was freed: taken here, it is not held by
    // this thread (the tests do nothing else with the store meanwhile).
    let freedUnderTheLock = Locked<[Bool]>([])
    store.state.withWriter {
      $0.n = 1
      $0.token = Token {
        let free = saver.lock.try()
        if free { saver.lock.unlock() }
        freedUnderTheLock.withLock { $0.append(!free) }
      }
    }
    await #expect(throws: PersistenceError.self) { try await store.saved() }
    if clearedBySuccess { try FileManager.default.removeItem(at: blocker) }
    // The container lets go of the token: only the kept failure holds it.
    store.state.withWriter {
      $0.n = 2
      $0.token = nil
    }
    if clearedBySuccess {
      try await store.saved()
    } else {
      await #expect(throws: PersistenceError.self) { try await store.saved() }
    }
    #expect(freedUnderTheLock.current == [false])
  }
}
