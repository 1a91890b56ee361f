import Dispatch
import Foundation
import SingleWriter

/// What saves a ``PersistedState``: one save at a time, on its own queue, of the newest
/// value its change stream delivered, and the bookkeeping `saved()` waits on.
///
/// Versions are the container's publication versions (`publishedVersion`), which never
/// wrap.
final class Saver<Value: Sendable>: @unchecked Sendable {
  // Sendable: the `let`s are immutable and Sendable; every `var` is touched only under
  // `lock`.

  let file: StateFile
  let encode: @Sendable (Value) throws -> Data
  let onFailure: (@Sendable (PersistenceError) -> Void)?
  /// The least time from one save's start to the next's, unless a flush waits.
  let interval: Duration
  /// Where encoding and file I/O run, one save at a time, off the cooperative pool (a
  /// flush to disk may block for milliseconds) and away from every writer and reader.
  let queue = DispatchQueue(label: "SingleWriterPersistence.save", qos: .utility)
  let lock = NSLock()

  /// The version on disk: the newest saved, or the one loaded (or started from).
  var savedVersion: UInt64
  /// The newest value whose save failed, kept for `saved()` to retry, with its error.
  var failure: (version: UInt64, value: Value, error: PersistenceError)?
  /// A retry of `failure` is queued.
  var retrying = false
  /// The description of the failure reported last, until a save succeeds: one like it is
  /// not reported again, since a handler or a stream's consumer that records it in the
  /// state makes a change whose save fails the same way, and would be told of it again,
  /// without end.
  var lastReported: String?
  /// `saved()` calls waiting for a version to reach the disk.
  var flushes: [(version: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
  /// `failures()` streams, by id.
  var failureStreams: [UInt64: AsyncStream<PersistenceError>.Continuation] = [:]
  var nextStreamID: UInt64 = 0
  /// The saver between two saves, until its interval is up or a flush comes, and the
  /// number of that rest: a timer set for an earlier rest must not end a later one.
  var resting: CheckedContinuation<Void, Never>?
  var rests: UInt64 = 0

  init(
    file: StateFile, version: UInt64, interval: Duration,
    encode: @escaping @Sendable (Value) throws -> Data,
    onFailure: (@Sendable (PersistenceError) -> Void)?
  ) {
    self.file = file
    self.savedVersion = version
    self.interval = interval
    self.encode = encode
    self.onFailure = onFailure
  }

  // Saving has ended (the container was freed and its last value saved): the failure
  // streams end too, else a task iterating one would wait forever.
  deinit { for stream in failureStreams.values { stream.finish() } }

  /// Whether `version` is `other` or newer: the hub's versions never wrap.
  static func isAtLeast(_ version: UInt64, _ other: UInt64) -> Bool { version >= other }

  /// Saves each value `changes` delivers, one at a time: a value delivered while a save
  /// runs waits, and the stream hands over only the newest, so a burst of writes ends in
  /// one save of its last value. Between two saves it rests until `interval` has passed
  /// since the first began, unless a flush waits: a change after a quiet spell is saved
  /// at once, and a stream of changes costs at most one save per interval. Ends when the
  /// container is freed, after saving the value it was freed with.
  ///
  /// A rest after a save that writes outran is taken unsubscribed, so that the writes
  /// that go on meanwhile cost what unobserved ones do; then the saver subscribes again
  /// and saves the value it finds. Those writes move no version, yet none is lost: the
  /// look that found the save outrun moved the version past the value saved (collecting
  /// the outrunning writes' publication), and every value delivered after the rest has
  /// that version or a newer one, so it is saved, and a `saved()` during the rest waits
  /// for it. The rest holds the container, so that one freed meanwhile still has its last
  /// value saved.
  static func run(
    _ saver: Saver, _ changes: sending ThreadSafeSingleWriter<Value>.Changes<Value>.Iterator,
    of state: ThreadSafeSingleWriter<Value>
  ) {
    // The iterator is made by the caller, before the task runs: one made after the
    // container is freed ends at once, and would not save the value it was freed with.
    // Boxed, so that the task's closure does not keep that subscription through a rest
    // taken unsubscribed.
    let first = FirstIterator(changes)
    Task.detached { [weak state] in
      var iterator = first.take()
      let clock = ContinuousClock()
      while let value = await iterator?.next() {
        let started = clock.now
        let delivered = iterator.unsafelyUnwrapped.deliveredVersion
        // No rest after a value the disk has already (the first, the one loaded).
        guard await saver.save(value, version: delivered) else { continue }
        let rest = saver.interval - started.duration(to: clock.now)
        guard rest > .zero, let container = state, container.publishedVersion != delivered
        else {
          await saver.rest(for: rest)
          continue
        }
        iterator = nil
        await saver.rest(for: rest)
        iterator = container.changes().makeAsyncIterator()
      }
    }
  }

  /// Waits for `duration`, or until a flush waits, whichever comes first.
  func rest(for duration: Duration) async {
    guard duration > .zero else { return }
    await withCheckedContinuation { (rest: CheckedContinuation<Void, Never>) in
      let number: UInt64? = lock.withLock {
        guard flushes.isEmpty else { return nil }
        rests &+= 1
        resting = rest
        return rests
      }
      guard let number else { return rest.resume() }
      // Past about 292 years in nanoseconds, only a flush ends the rest.
      let (seconds, attoseconds) = duration.components
      let deadline: DispatchTime =
        seconds < Int64.max / 1_000_000_000
        ? .now() + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        : .distantFuture
      queue.asyncAfter(deadline: deadline) { self.endRest(number) }
    }
  }

  /// Whether the saver rests between two saves now; for tests.
  var isResting: Bool { lock.withLock { resting != nil } }

  /// Ends the rest numbered `number`, or the current one if `nil`, if it is still on.
  func endRest(_ number: UInt64? = nil) {
    let rest: CheckedContinuation<Void, Never>? = lock.withLock {
      guard number == nil || number == rests else { return nil }
      defer { resting = nil }
      return resting
    }
    rest?.resume()
  }

  /// Saves `value` on the queue and returns `true` when done, unless the disk has it
  /// already (the first value delivered is the one loaded): then `false`, at once.
  @discardableResult func save(_ value: Value, version: UInt64) async -> Bool {
    guard lock.withLock({ !Self.isAtLeast(savedVersion, version) }) else { return false }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      queue.async {
        self.write(value, version: version)
        done.resume()
      }
    }
    return true
  }

  /// On the queue: encodes and writes `value`, unless a newer one is on disk already, and
  /// settles the flushes it satisfies.
  func write(_ value: Value, version: UInt64) {
    guard lock.withLock({ !Self.isAtLeast(savedVersion, version) }) else { return }
    let outcome: Result<Void, PersistenceError>
    do {
      let data: Data
      do { data = try encode(value) } catch {
        throw PersistenceError(kind: .encode, file: file.url, underlying: error)
      }
      try file.replace(with: data)
      outcome = .success(())
    } catch let error as PersistenceError {
      outcome = .failure(error)
    } catch {
      outcome = .failure(PersistenceError(kind: .encode, file: file.url, underlying: error))
    }
    // The failed value this save replaces or clears, freed after the lock: a value only
    // the saver held runs its deinit there, which may call the store (`failures()`).
    let (settled, streams, report, replaced) = lock.withLock {
      var report = false
      var replaced: (version: UInt64, value: Value, error: PersistenceError)?
      switch outcome {
      case .success:
        savedVersion = version
        lastReported = nil
        if let failure, Self.isAtLeast(version, failure.version) {
          replaced = failure
          self.failure = nil
        }
      case .failure(let error):
        if failure.map({ Self.isAtLeast(version, $0.version) }) ?? true {
          replaced = failure
          failure = (version, value, error)
        }
        report = error.description != lastReported
        lastReported = error.description
      }
      // A flush asked for this version or an older one: done, or failed with this save.
      let settled = flushes.filter { Self.isAtLeast(version, $0.version) }
      flushes.removeAll { Self.isAtLeast(version, $0.version) }
      return (settled, report ? Array(failureStreams.values) : [], report, replaced)
    }
    // Freed here, before a flush waiting for it resumes (a test asserts it): without
    // `consume`, a debug build frees it at the scope's end, after the resumes.
    _ = consume replaced
    for flush in settled { flush.continuation.resume(with: outcome.mapError { $0 }) }
    if report, case .failure(let error) = outcome {
      onFailure?(error)
      for stream in streams { stream.yield(error) }
    }
  }

  /// Returns once `version` is on disk; throws if the save that should have put it there
  /// failed. A version whose save failed already is saved again first (from the value
  /// kept), so that a flush after a passing failure, a folder made again, succeeds.
  func flush(through version: UInt64) async throws {
    try await withCheckedThrowingContinuation { continuation in
      let retry: Bool = lock.withLock {
        if Self.isAtLeast(savedVersion, version) {
          continuation.resume()
          return false
        }
        flushes.append((version, continuation))
        guard let failure, Self.isAtLeast(failure.version, version), !retrying else {
          return false
        }
        retrying = true
        return true
      }
      // A flush never waits out the saver's rest.
      endRest()
      guard retry else { return }
      queue.async {
        // The newest failed value as the retry runs, not as it was queued: a newer save
        // may have failed meanwhile, and a flush that found this retry queued waits for it.
        let newest = self.lock.withLock { () -> (version: UInt64, value: Value)? in
          self.retrying = false
          return self.failure.map { ($0.version, $0.value) }
        }
        guard let newest else { return }
        self.write(newest.value, version: newest.version)
      }
    }
  }

  /// A new stream of save failures.
  func failures() -> AsyncStream<PersistenceError> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: PersistenceError.self, bufferingPolicy: .bufferingNewest(16))
    let id = lock.withLock {
      nextStreamID += 1
      failureStreams[nextStreamID] = continuation
      return nextStreamID
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.lock.withLock { self?.failureStreams.removeValue(forKey: id) }
    }
    return stream
  }
}

/// The saver's first iterator, made by `PersistedState.init`, for its task to take.
private final class FirstIterator<Value: Sendable>: @unchecked Sendable {
  // Sendable: `iterator` is set once here and taken once, by the saver's task, which
  // starts after this is made.
  private var iterator: ThreadSafeSingleWriter<Value>.Changes<Value>.Iterator?

  init(_ iterator: sending ThreadSafeSingleWriter<Value>.Changes<Value>.Iterator) {
    self.iterator = iterator
  }

  func take() -> ThreadSafeSingleWriter<Value>.Changes<Value>.Iterator? { iterator.take() }
}
