import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "A failure like the last one reported is not reported again until a save succeeds":
/// an app that records a failure in the state (a field its UI shows) from
/// `onSaveFailure` or a `failures()` consumer makes a change, whose save fails the same
/// way while the folder is unwritable. Each report used to be followed by another, so the
/// handler's write, its save and its report went round without end, a core kept busy for
/// as long as the folder stayed unwritable. The tests run as root, so a save is made to
/// fail by a path whose folder is a regular file.
@Suite struct RepeatedFailureReportedOnceTests {
  struct Screen: Codable, Sendable, Equatable {
    var fontSize = 12
    var lastError = ""
    var errorsShown = 0
  }

  /// A file in a "folder" that is a regular file: every save fails with ENOTDIR.
  func blockedPath() throws -> (file: URL, blocker: URL) {
    let blocker = makeFolder().appendingPathComponent("blocker")
    try Data("not a folder".utf8).write(to: blocker)
    return (blocker.appendingPathComponent("screen.json"), blocker)
  }

  @Test func aHandlerThatRecordsTheFailureInTheStateIsNotCalledAgainByItsOwnWrite()
    async throws
  {
    let (url, _) = try blockedPath()
    // The container, for the handler, which the store does not exist for yet.
    let container = Locked<ThreadSafeSingleWriter<Screen>?>(nil)
    let handled = Locked(0)
    var store: PersistedState<Screen>? = try PersistedState(
      file: url, default: Screen(),
      onSaveFailure: { error in
        handled.withLock { $0 += 1 }
        container.current?.withWriter {
          $0.lastError = error.description
          $0.errorsShown += 1
        }
      })
    container.withLock { $0 = store!.state }
    let failures = store!.failures()
    store!.state.writeNext { $0.write.fontSize = 14 }
    await #expect(throws: PersistenceError.self) { try await store!.saved() }
    // The handler's write is saved (it failed the same way) and thrown, not reported.
    await #expect(throws: PersistenceError.self) { try await store!.saved() }
    #expect(store!.state.read.errorsShown == 1)
    // Saving ends once the container is freed and its last value's save has run: every
    // report has been made by the time the stream ends.
    container.withLock { $0 = nil }
    store = nil
    var streamed = 0
    for await _ in failures { streamed += 1 }
    #expect(handled.current == 1)
    #expect(streamed == 1)
  }

  @Test func aConsumerThatRecordsEachFailureInTheStateEndsWithTheFirst() async throws {
    let (url, _) = try blockedPath()
    var store: PersistedState<Screen>? = try PersistedState(file: url, default: Screen())
    var failures = store!.failures().makeAsyncIterator()
    store!.state.writeNext { $0.write.fontSize = 14 }
    var taken = 0
    if let failure = await failures.next() {
      taken += 1
      store!.state.withWriter {
        $0.lastError = failure.description
        $0.errorsShown += 1
      }
    }
    await #expect(throws: PersistenceError.self) { try await store!.saved() }
    store = nil
    // Each failure taken would be recorded too: a second one would go round again.
    while await failures.next() != nil { taken += 1 }
    #expect(taken == 1)
  }

  @Test func aConsumerThatFlushesOnEachFailureEndsWithTheFirst() async throws {
    let (url, _) = try blockedPath()
    var store: PersistedState<Screen>? = try PersistedState(file: url, default: Screen())
    var failures = store!.failures().makeAsyncIterator()
    store!.state.writeNext { $0.write.fontSize = 14 }
    var taken = 0
    if await failures.next() != nil {
      taken += 1
      // A retry: `saved()` saves the failed value again, which fails the same way.
      await #expect(throws: PersistenceError.self) { try await store!.saved() }
    }
    store = nil
    while await failures.next() != nil { taken += 1 }
    #expect(taken == 1)
  }

  @Test func aFailureAfterASuccessIsReportedAgain() async throws {
    let (url, blocker) = try blockedPath()
    let store = try PersistedState(file: url, default: Screen())
    var failures = store.failures().makeAsyncIterator()
    store.state.writeNext { $0.write.fontSize = 14 }
    #expect(await failures.next()?.kind == .save)
    try FileManager.default.removeItem(at: blocker)
    try await store.saved()  // the folder is made: saved
    try FileManager.default.removeItem(at: blocker)
    try Data("not a folder".utf8).write(to: blocker)
    store.state.writeNext { $0.write.fontSize = 16 }
    #expect(await failures.next()?.kind == .save)
    await #expect(throws: PersistenceError.self) { try await store.saved() }
  }
}
