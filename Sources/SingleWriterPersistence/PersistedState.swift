import Foundation
import SingleWriter

/// A `ThreadSafeSingleWriter` whose value survives a restart and a crash:
/// loaded from a file, and saved to it after every change, atomically, in the background.
///
/// ```swift
/// let settings = try PersistedState(file: url, default: Settings())
/// settings.state.writeNext { $0.write.fontSize = 14 }  // saved without being asked
/// try await settings.saved()                            // on disk, before quitting
/// ```
///
/// Write through ``state`` as to any container: every checkout's end, closure write,
/// queued write and transaction that changed the value is saved. A save
///
/// - replaces the file atomically: the bytes go to a temporary file in the same folder,
///   flushed to disk, renamed over the file, and the folder flushed where the platform
///   needs it, so a process killed or a machine that loses power at any moment leaves
///   the old file or the new one, never a mix;
/// - keeps order and coalesces: one save runs at a time, a burst of writes ends in one
///   save of its last value, and an older value never replaces a newer one; a change
///   after a quiet spell is saved at once, and a stream of changes is saved at most once
///   per `minimumSaveInterval` (10 ms by default), so that it costs the writers little;
/// - stays out of the way: a change wakes the saver, which takes the value with one read
///   and encodes and writes it on a queue of its own, so no writer or reader ever waits
///   for encoding or I/O;
/// - writes JSON by default, pretty-printed with sorted keys, so the file is readable
///   and diffs well.
///
/// ``saved()`` is the flush: call it where the app may stop (on Apple, when the scene
/// moves to the background; on a server, at shutdown). A failed save loses nothing in
/// memory; it is thrown by the next ``saved()``, given to `onSaveFailure` and to
/// ``failures()``, and retried by the next change. A failure like the last one reported
/// is not reported again until a save succeeds (``saved()`` still throws it): a handler
/// that records it in the state makes a change whose save fails alike, without end.
///
/// Saving goes on while ``state`` lives, even if this object is released first, and ends
/// with a save of the value the container was freed with, if it had not been saved, at
/// most `minimumSaveInterval` after the save before it began. That save runs in the
/// background, as every save does: a process that exits right after
/// dropping the store can stop before it, so await ``saved()`` first.
public final class PersistedState<Value: Codable & Sendable>: Sendable {
  /// The container: read and write it as usual; every change is saved.
  public let state: ThreadSafeSingleWriter<Value>
  /// The file the value is kept in.
  public let file: URL
  let saver: Saver<Value>

  /// Loads the value from `file` if it exists, else starts from `default`, and saves every
  /// change to `file` from then on, as JSON.
  ///
  /// ```swift
  /// let folder = URL.applicationSupportDirectory  // created if missing, on the first save
  /// let settings = try PersistedState(
  ///   file: folder.appendingPathComponent("settings.json"), default: Settings())
  /// ```
  ///
  /// Nothing is written until the first change: starting from `default` leaves no file.
  /// A file that cannot be decoded (corrupt, or from an incompatible version of `Value`)
  /// throws a ``PersistenceError`` that names the file and the decoder's error, and is
  /// left exactly as it was, never replaced by `default`. So does one that cannot be
  /// read (not a regular file, no permission, a loop of links), and a URL that is not a
  /// file's, with kind `read`: only a file that is not there starts from `default`.
  ///
  /// - Parameters:
  ///   - file: Where the value is kept. Its folder is created on the first save if it is
  ///     missing (unless a `..` climbs out of a missing folder: that save fails). One
  ///     `PersistedState` per file: two would overwrite each other's saves.
  ///   - default: The value when there is no file yet.
  ///   - encoder: Encodes each save; by default, pretty-printed JSON with sorted keys.
  ///   - decoder: Decodes the file.
  ///   - minimumSaveInterval: The least time from one save's start to the next's while
  ///     changes keep coming. A change after a quiet spell is saved at once, and
  ///     ``saved()`` never waits for it; a crash may lose the changes of the last interval
  ///     that no ``saved()`` confirmed. `.zero` saves again as soon as a save ends.
  ///   - onSaveFailure: Called on the saver's queue with each failed save, except one
  ///     that fails as the last one reported did, until a save succeeds.
  public convenience init(
    file: URL, default: @autoclosure () throws -> Value, encoder: JSONEncoder? = nil,
    decoder: JSONDecoder = JSONDecoder(), minimumSaveInterval: Duration = .milliseconds(10),
    onSaveFailure: (@Sendable (PersistenceError) -> Void)? = nil
  ) throws {
    let encoder = SendableBox(encoder ?? Self.readableEncoder())
    let decoder = SendableBox(decoder)
    try self.init(
      file: file, default: try `default`(),
      encode: { try encoder.value.encode($0) },
      decode: { try decoder.value.decode(Value.self, from: $0) },
      minimumSaveInterval: minimumSaveInterval, onSaveFailure: onSaveFailure)
  }

  /// Loads and saves with your own format: a property list, a compressed archive.
  ///
  /// ```swift
  /// let settings = try PersistedState(
  ///   file: url, default: Settings(),
  ///   encode: { try PropertyListEncoder().encode($0) },
  ///   decode: { try PropertyListDecoder().decode(Settings.self, from: $0) })
  /// ```
  ///
  /// `encode` runs on the saver's queue, one save at a time; `decode` runs once, here.
  /// `encode` may read the container but not write it: its write is a change, whose save
  /// writes again, without end.
  /// Otherwise as ``init(file:default:encoder:decoder:minimumSaveInterval:onSaveFailure:)``.
  public init(
    file: URL, default: @autoclosure () throws -> Value,
    encode: @escaping @Sendable (Value) throws -> Data,
    decode: (Data) throws -> Value,
    minimumSaveInterval: Duration = .milliseconds(10),
    onSaveFailure: (@Sendable (PersistenceError) -> Void)? = nil
  ) throws {
    // fatalError, not precondition: its message is kept in optimized builds too.
    if minimumSaveInterval < .zero { fatalError("a negative minimumSaveInterval") }
    // Misuse, reported before anything is fetched: a web address would be downloaded
    // here, and its path on this disk written by every save.
    guard file.isFileURL else {
      throw PersistenceError(
        kind: .read, file: file,
        underlying: CocoaError(.fileReadUnsupportedScheme, userInfo: [NSURLErrorKey: file]))
    }
    let stateFile = StateFile(file)
    let initial: Value
    if let data = try stateFile.read() {
      do {
        initial = try decode(data)
      } catch {
        throw PersistenceError(kind: .decode, file: file, underlying: error)
      }
    } else {
      initial = try `default`()
    }
    self.file = file
    state = ThreadSafeSingleWriter(value: initial)
    // Subscribed before anyone else can write: no change is missed, and the version now
    // is the one the file (or the absence of one) holds.
    let changes = state.changes().makeAsyncIterator()
    saver = Saver(
      file: stateFile, version: state.publishedVersion, interval: minimumSaveInterval,
      encode: encode, onFailure: onSaveFailure)
    Saver.run(saver, changes, of: state)
  }

  /// Returns once every write made before the call is on disk; throws the
  /// ``PersistenceError`` of the save that should have put it there, if that save failed.
  ///
  /// ```swift
  /// // SwiftUI: flush when the app leaves the foreground, since it may be stopped there.
  /// .onChange(of: scenePhase) { _, phase in
  ///   if phase == .background { Task { try? await settings.saved() } }
  /// }
  /// // A server: at shutdown, after the last request.
  /// try await settings.saved()
  /// ```
  ///
  /// "Made before the call" counts the checkouts that ended, the closure writes that
  /// returned and the `writeNext` writes queued before it (it waits for those to run, as
  /// `drained()` does); a proxy still held is saved after its checkout ends, by a later
  /// save. But a proxy held at the call that has written while writes before it were not
  /// saved yet holds the flush up until it is released: the saver takes whole values only,
  /// and those writes are now under the proxy's half-done ones. So never await `saved()`
  /// in a task that holds a proxy of this container: if it waits behind one that task
  /// took, it warns on standard error after a second, as `drained()` does (the task may
  /// have sent the proxy to another task, which will release it; if not, it is a
  /// deadlock). Inside an async `transaction`'s body on this container, it saves the
  /// writes made before the transaction, never the body's draft; but with a write queued
  /// behind the transaction, its drain would wait for the commit, which waits for it, so
  /// it stops the program with a message instead. Returns at once if nothing changed
  /// since the last save. If the newest value's save failed, it is tried again first, so
  /// that a flush after a passing failure succeeds. It suspends, never blocks a thread,
  /// and does not end early when its task is cancelled: a flush before quitting should
  /// finish.
  public func saved() async throws {
    await state.drained()
    let warning = state.warnIfStillWaitingBehindThisTask(in: "`saved()`")
    defer { warning?.cancel() }
    try await saver.flush(through: state.publishedVersion)
  }

  /// The failed saves from now on, for an app that shows them; each is also thrown by the
  /// next ``saved()``.
  ///
  /// ```swift
  /// for await failure in settings.failures() { showAlert(failure.description) }
  /// ```
  ///
  /// The stream keeps the 16 newest failures its consumer has not taken yet, and ends when
  /// saving ends: once the container is freed and its last value saved. A failure like
  /// the last one reported is not reported again until a save succeeds, so a consumer
  /// that records each in the state, or retries with ``saved()``, does not go round.
  public func failures() -> AsyncStream<PersistenceError> { saver.failures() }

  /// Whether the saver rests between two saves now, for its `minimumSaveInterval`; for
  /// this package's tests.
  package var saverIsResting: Bool { saver.isResting }

  /// How many `saved()` calls wait for a save now; for this package's tests.
  package var flushesWaiting: Int { saver.lock.withLock { saver.flushes.count } }

  /// The default encoder: pretty-printed JSON with sorted keys, readable and diffable.
  static func readableEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return encoder
  }
}

/// Holds a `JSONEncoder` or `JSONDecoder`, which Foundation does not mark `Sendable` on
/// every platform.
struct SendableBox<Wrapped>: @unchecked Sendable {
  // Sendable: the coders are only configured before they are boxed, and their `encode`
  // and `decode` are safe to call from any thread; the saver calls `encode` on one queue.
  let value: Wrapped
  init(_ value: Wrapped) { self.value = value }
}
