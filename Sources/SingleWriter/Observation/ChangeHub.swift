import SingleWriterAtomics

/// Where a container announces that a checkout changed its value, shared by
/// ``SingleWriter`` and ``ThreadSafeSingleWriter``.
///
/// A publication bumps a version number in one atomic word: a consumer that is not
/// waiting finds the new version when it next looks, and reads the newest value itself.
/// Only when a consumer sleeps in ``waitForChange(after:isolation:)`` or the Observation
/// module tracks the container does a publication take the slow path, once per batch:
/// the first publication after a consumer went to sleep wakes it, later ones see no
/// sleeper and only bump the version. Nothing is allocated per publication.
@usableFromInline
final class ChangeHub: @unchecked Sendable {
  // Sendable: `word` is only touched through atomics; every other field is touched only
  // under `mutex`, except `notifier`, written once under `mutex` before the `tracked` bit
  // is set with release ordering, and read only after that bit is seen with acquire.

  /// `version << versionShift | snapshotWanted | closed | tracked | waiting`.
  @usableFromInline let word: UnsafeMutablePointer<sw_atomic_u32>
  /// Guards the fields below and orders sleepers against publishers.
  let mutex: UnsafeMutablePointer<sw_mutex>
  /// Consumers asleep until the version changes, with the ids their cancellation uses.
  var sleepers: [(id: UInt64, continuation: UnsafeContinuation<Void, Never>)] = []
  /// Ids for sleepers; one per iterator.
  var nextSleeperID: UInt64 = 0
  /// Live `changes()` subscriptions.
  var subscriptions = 0
  /// How many times a sleeper was resumed by a publication; for tests.
  var wakeCount = 0
  /// Observation-module tracking, once a tracked read has happened; see `tracked`.
  @usableFromInline @exclusivity(unchecked) var notifier: (any ChangeNotifier)?
  /// The container's value when it was freed, a `LastValue<Value>`, kept by `close` for
  /// consumers that have not had it yet: their weak reads fail from then on.
  var lastValue: AnyObject?
  /// Makes the `LastValue` that `close` keeps; set by the first subscription, where the
  /// value's type is known to be copyable, so a container of any value can close.
  var keepLast: (() -> AnyObject)?
  /// A copy of the value as a checkout ended with it, a `LastValue<Value>`, kept at the
  /// request of a consumer that found the value half done, and the version it belongs to.
  var snapshot: AnyObject?
  var snapshotVersion: UInt32 = 0
  /// How many snapshots have been kept: a consumer takes one only if it was kept after
  /// the value it last delivered was read, so that it never goes back to an older value.
  var snapshotCount: UInt64 = 0

  /// A consumer sleeps in `sleepers`.
  @inlinable static var waiting: UInt32 { 1 }
  /// The Observation module tracks this container: every publication notifies it.
  @inlinable static var tracked: UInt32 { 2 }
  /// The container is gone: no more publications.
  @inlinable static var closed: UInt32 { 4 }
  /// A consumer found the value half done: the next checkout end keeps a snapshot.
  @inlinable static var snapshotWanted: UInt32 { 8 }
  @inlinable static var versionShift: UInt32 { 4 }
  /// One publication. The version wraps after 2^28 of them; consumers only compare it for
  /// equality, so a wrap is missed only if exactly that many happen while one looks away.
  @inlinable static var versionStep: UInt32 { 1 << versionShift }

  @usableFromInline init() {
    word = .allocate(capacity: 1)
    word.initialize(to: sw_atomic_u32())
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: sw_mutex())
  }

  deinit {
    word.deallocate()
    mutex.deallocate()
  }

  /// The current version, with acquire ordering: values written before it was published
  /// are visible to a read that follows.
  @inlinable var version: UInt32 { sw_load_acquire(word) >> Self.versionShift }

  /// Announces one changing checkout: a version bump, and the slow path only if someone
  /// sleeps or the Observation module tracks the container.
  @inlinable func publish() {
    let old = sw_fetch_add(word, Self.versionStep)
    if old & (Self.waiting | Self.tracked) != 0 { publishSlow(old) }
  }

  /// `publish` for a hub whose word only one isolation domain changes: a ``SingleWriter``'s,
  /// whose consumers iterate where the container lives (its stream is not `Sendable`).
  /// A load and a store instead of a read-modify-write; only cancellation runs elsewhere,
  /// and it touches `sleepers` under `mutex`, never `word`.
  @inlinable func publishConfined() {
    let old = sw_load_relaxed(word)
    sw_store_release(word, old &+ Self.versionStep)
    if old & (Self.waiting | Self.tracked) != 0 { publishSlow(old) }
  }

  @usableFromInline func publishSlow(_ old: UInt32) {
    // Outside `mutex`: an onChange handler may subscribe or read this container.
    if old & Self.tracked != 0 { notifier.unsafelyUnwrapped.notifyChange() }
    if old & Self.waiting != 0 { wakeSleepers() }
  }

  /// Resumes every sleeper. Under `mutex`, so a sleeper that registered before the
  /// version bump is found; resuming only schedules the task, it never runs it here.
  func wakeSleepers() {
    sw_mutex_lock(mutex)
    sw_fetch_and(word, ~Self.waiting)
    for sleeper in sleepers { sleeper.continuation.resume() }
    wakeCount += sleepers.count
    sleepers.removeAll(keepingCapacity: true)
    sw_mutex_unlock(mutex)
  }

  /// Ends every consumer: called once, by the container's `deinit`, with its value.
  ///
  /// The value is kept only while a `changes()` subscription lives to read it; the
  /// version stays as it is, the one that value belongs to.
  func close<Value>(keeping value: @autoclosure () -> Value) {
    closeKeeping { LastValue(value()) }
  }

  /// `close(keeping:)` with the value that `keepLast` makes.
  func close() {
    closeKeeping { self.keepLast?() }
  }

  /// Ends every consumer, after the value `keep` makes if anyone subscribed.
  private func closeKeeping(_ keep: () -> AnyObject?) {
    sw_mutex_lock(mutex)
    if subscriptions != 0 { lastValue = keep() }
    sw_fetch_or(word, Self.closed)
    for sleeper in sleepers { sleeper.continuation.resume() }
    sleepers.removeAll()
    sw_mutex_unlock(mutex)
  }

  var isClosed: Bool { sw_load_acquire(word) & Self.closed != 0 }

  /// The value `close` kept, or `nil` if the container lives or nobody subscribed.
  func lastValue<Value>(of type: Value.Type) -> Value? {
    withLock { lastValue.map { ($0 as! LastValue<Value>).value } }
  }

  // MARK: Snapshots

  /// Whether a consumer waits for a snapshot; the checkout's holder looks before it
  /// publishes.
  @inlinable var wantsSnapshot: Bool { sw_load_relaxed(word) & Self.snapshotWanted != 0 }

  /// A consumer found the value half done, and every checkout may be, in a stream of them:
  /// asks the next checkout end to keep a copy.
  func wantSnapshot() { sw_fetch_or(word, Self.snapshotWanted) }

  /// The holder of a checkout that is ending, before it publishes: keeps `make()`'s copy
  /// of the value as the version that publication makes.
  func keepSnapshot(_ make: () -> AnyObject?) {
    withLock {
      snapshot = make()
      snapshotVersion = (version &+ 1) & (UInt32.max >> Self.versionShift)
      snapshotCount &+= 1
      sw_fetch_and(word, ~Self.snapshotWanted)
    }
  }

  /// `keepSnapshot` with the copy that `keepLast` makes, for a container whose value's
  /// type its own code cannot name as copyable here.
  @usableFromInline func keepSnapshotOfLast() { keepSnapshot { keepLast?() } }

  /// The snapshot, its version and its count, if it was kept after the `count`th: a
  /// consumer slower than a stream of checkouts takes the newest whole value it can, then
  /// looks again. Counts, not versions, order it against values read directly: a consumer
  /// may read a value newer than the version it read just before.
  func snapshot<Value>(
    of type: Value.Type, after count: UInt64
  ) -> (value: Value, version: UInt32, count: UInt64)? {
    withLock {
      guard let snapshot, snapshotCount > count else { return nil }
      return ((snapshot as! LastValue<Value>).value, snapshotVersion, snapshotCount)
    }
  }

  /// How many snapshots have been kept so far; read by a consumer after a direct read.
  var keptSnapshots: UInt64 { withLock { snapshotCount } }

  // MARK: Consumers

  /// Runs `body` under the hub's lock; for the containers' observer bookkeeping.
  func withLock<R>(_ body: () throws -> R) rethrows -> R {
    sw_mutex_lock(mutex)
    defer { sw_mutex_unlock(mutex) }
    return try body()
  }

  /// A fresh id for one iterator's sleeps.
  func makeSleeperID() -> UInt64 {
    withLock {
      nextSleeperID += 1
      return nextSleeperID
    }
  }

  /// Suspends until the version differs from `seen`, the container is gone, or the task
  /// is cancelled. Resumes in `isolation`: a main-actor consumer resumes on the main
  /// actor directly, with no hop through the global executor.
  func waitForChange(
    after seen: UInt32, id: UInt64, isolation: isolated (any Actor)? = #isolation
  ) async {
    await withTaskCancellationHandler {
      await withUnsafeContinuation(isolation: isolation) { continuation in
        sw_mutex_lock(mutex)
        // `waiting` set with one atomic that also returns the version: a publication
        // either came before it (we see the new version and do not sleep) or after it
        // (it sees `waiting` and takes `mutex`, which we hold until we are listed).
        let old = sw_fetch_or(word, Self.waiting)
        if old >> Self.versionShift != seen || old & Self.closed != 0 || Task.isCancelled {
          sw_mutex_unlock(mutex)
          continuation.resume()
          return
        }
        sleepers.append((id, continuation))
        sw_mutex_unlock(mutex)
      }
    } onCancel: {
      // The task's cancelled flag is set before this runs: a sleeper that is not listed
      // yet sees it under `mutex` and does not sleep.
      sw_mutex_lock(mutex)
      if let index = sleepers.firstIndex(where: { $0.id == id }) {
        sleepers.remove(at: index).continuation.resume()
      }
      sw_mutex_unlock(mutex)
    }
  }

  // MARK: Observation module

  /// Installs `make()`'s notifier on the first call: runs `markObserved`, so the
  /// container's writes mark themselves dirty, and only then sets `tracked`, so no
  /// tracked read can happen before its container publishes.
  @usableFromInline func installNotifier(_ make: () -> any ChangeNotifier, markObserved: () -> Void)
  {
    withLock {
      guard notifier == nil else { return }
      notifier = make()
      markObserved()
      sw_fetch_or(word, Self.tracked)
    }
  }
}
