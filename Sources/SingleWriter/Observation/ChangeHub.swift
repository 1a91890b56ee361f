import SingleWriterAtomics

/// Where a container announces that a checkout changed its value, shared by
/// ``SingleWriter`` and ``ThreadSafeSingleWriter``.
///
/// A publication marks one atomic word `pending`; a consumer folds that into a version
/// number when it next looks (`version`), and reads the newest value itself. A
/// publication that finds `pending` set and nobody to tell costs one load. Only when a
/// consumer sleeps in ``waitForChange(after:isolation:)`` or the Observation module
/// tracks the container does a publication take the slow path: the first publication
/// after a consumer went to sleep wakes it, later ones find `pending` and no sleeper.
/// Nothing is allocated per publication.
@usableFromInline
final class ChangeHub: @unchecked Sendable {
  // Sendable: `word` is only touched through atomics; every other field is touched only
  // under `mutex`, except `notifier`, written once under `mutex` before the `tracked` bit
  // is set with release ordering, and read only after that bit is seen with acquire.

  /// A ``ChangeHubWord``: the version and the flags. Written only by the driver below.
  @usableFromInline let word: UnsafeMutablePointer<sw_atomic_u64>
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
  var snapshotVersion: UInt64 = 0
  /// How many snapshots have been kept: a consumer takes one only if it was kept after
  /// the value it last delivered was read, so that it never goes back to an older value.
  var snapshotCount: UInt64 = 0

  @usableFromInline init() {
    word = .allocate(capacity: 1)
    word.initialize(to: sw_atomic_u64())
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: sw_mutex())
  }

  deinit {
    word.deallocate()
    mutex.deallocate()
  }

  // MARK: The word's driver
  //
  // The only code that writes `word`: each event is a transition of `ChangeHubWord`.

  /// The word now, with acquire ordering: values written before its version was published
  /// are visible to a read that follows.
  @inlinable var current: ChangeHubWord { ChangeHubWord(raw: sw_u64_load_acquire(word)) }

  /// Applies a blind event with one atomic read-modify-write, `change`, and returns the
  /// word it replaced. Debug builds check that `transition` allows that word and makes
  /// from it the word `change` made, a legal one.
  @inlinable @inline(__always) @discardableResult
  func apply(
    _ change: ChangeHubWord.Change, _ transition: (ChangeHubWord) -> ChangeHubWord?
  ) -> ChangeHubWord {
    let old: UInt64
    switch change {
    case .add(let amount): old = sw_u64_fetch_add(word, amount)
    case .insert(let bits): old = sw_u64_fetch_or(word, bits)
    case .remove(let bits): old = sw_u64_fetch_and(word, ~bits)
    }
    let replaced = ChangeHubWord(raw: old)
    assert(Self.check(replaced, change, transition))
    return replaced
  }

  /// `apply` for a hub whose word only one isolation domain writes: a ``SingleWriter``'s,
  /// whose consumers iterate where the container lives (its stream is not `Sendable`).
  /// A load and a store instead of a read-modify-write; only cancellation runs elsewhere,
  /// and it touches `sleepers` under `mutex`, never `word`.
  @inlinable @inline(__always)
  func applyConfined(
    _ change: ChangeHubWord.Change, _ transition: (ChangeHubWord) -> ChangeHubWord?
  ) -> ChangeHubWord {
    let replaced = ChangeHubWord(raw: sw_u64_load_relaxed(word))
    sw_u64_store_release(word, replaced.applying(change).raw)
    assert(Self.check(replaced, change, transition))
    return replaced
  }

  /// Applies `transition` with a compare-and-exchange until it sticks, or until it
  /// returns `nil` in the word it finds. Returns the word it replaced. The only
  /// compare-and-exchange on `word`; debug builds check every new word.
  @discardableResult
  func update(_ transition: (ChangeHubWord) -> ChangeHubWord?) -> ChangeHubWord? {
    var old = ChangeHubWord(raw: sw_u64_load_relaxed(word))
    while let new = transition(old) {
      assert(new.invariantViolation == nil, "\(old) -> \(new): \(new.invariantViolation!)")
      let found = sw_u64_cas_value(word, old.raw, new.raw)
      if found == old.raw { return old }
      old.raw = found
    }
    return nil
  }

  /// Whether a blind event's `change` of `replaced` is the one its `transition` allows,
  /// and legal; stops the program with the word if not.
  @usableFromInline static func check(
    _ replaced: ChangeHubWord, _ change: ChangeHubWord.Change,
    _ transition: (ChangeHubWord) -> ChangeHubWord?
  ) -> Bool {
    let new = replaced.applying(change)
    guard let expected = transition(replaced) else {
      preconditionFailure("\(change) cannot happen in \(replaced)")
    }
    precondition(expected == new, "\(replaced) -> \(new), not \(expected)")
    if let violation = new.invariantViolation {
      preconditionFailure("\(replaced) -> \(new): \(violation)")
    }
    return true
  }

  // MARK: Publications

  /// The current version, with what is pending collected into it first: every checkout
  /// that wrote and ended before this read (and was published) is in the value a read
  /// that follows finds.
  @inlinable var version: UInt64 {
    let now = current
    return now.isPending ? collect() : now.version
  }

  /// Folds `pending` into the version. If another consumer folded it first, its version
  /// covers every publication this one saw pending.
  @usableFromInline func collect() -> UInt64 {
    if let old = update({ $0.collect() }) { return old.collect().unsafelyUnwrapped.version }
    return current.version
  }

  /// Announces one changing checkout, after its end: `pending`, with a load only if it is
  /// set already and nobody sleeps or tracks; the slow path if someone does.
  ///
  /// The load is sequentially consistent, as are the end's read-modify-write of the state
  /// word before it and the consumers' of this word: a consumer that collects after this
  /// load saw `pending` reads the value after this checkout's end, and one that went to
  /// sleep before it is seen here.
  @inlinable func publish() {
    if ChangeHubWord(raw: sw_u64_load_seq_cst(word)).absorbsPublication { return }
    markPending()
  }

  /// `publish` past its load: sets `pending`, and notifies or wakes if it must. Out of
  /// line: once per batch that a consumer looks at, and the callers are hot paths.
  @usableFromInline @inline(never) func markPending() {
    let old = apply(ChangeHubWord.publication) { $0.publish() }
    if old.publicationIsSlow { publishSlow(old) }
  }

  /// `publish` for a ``SingleWriter``'s hub, through `applyConfined`.
  @inlinable func publishConfined() {
    if ChangeHubWord(raw: sw_u64_load_relaxed(word)).absorbsPublication { return }
    markPendingConfined()
  }

  @usableFromInline @inline(never) func markPendingConfined() {
    let old = applyConfined(ChangeHubWord.publication) { $0.publish() }
    if old.publicationIsSlow { publishSlow(old) }
  }

  @usableFromInline func publishSlow(_ old: ChangeHubWord) {
    // Outside `mutex`: an onChange handler may subscribe or read this container.
    if old.isTracked { notifier.unsafelyUnwrapped.notifyChange() }
    if old.isWaiting { wakeSleepers() }
  }

  /// Resumes every sleeper. Under `mutex`, so a sleeper that registered before the
  /// publication is found; resuming only schedules the task, it never runs it here.
  func wakeSleepers() {
    sw_mutex_lock(mutex)
    apply(ChangeHubWord.wakeUp) { $0.wake() }
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
    let closed = update { $0.close() }
    assert(closed != nil, "closed twice")
    for sleeper in sleepers { sleeper.continuation.resume() }
    sleepers.removeAll()
    sw_mutex_unlock(mutex)
  }

  var isClosed: Bool { current.isClosed }

  /// The value `close` kept, or `nil` if the container lives or nobody subscribed.
  func lastValue<Value>(of type: Value.Type) -> Value? {
    withLock { lastValue.map { ($0 as! LastValue<Value>).value } }
  }

  // MARK: Snapshots

  /// Whether a consumer waits for a snapshot; the checkout's holder looks before it
  /// publishes.
  @inlinable var wantsSnapshot: Bool { ChangeHubWord(raw: sw_u64_load_relaxed(word)).wantsSnapshot }

  /// A consumer found the value half done, and every checkout may be, in a stream of them:
  /// asks the next checkout end to keep a copy.
  func wantSnapshot() { update { $0.wantSnapshot() } }

  /// The holder of a checkout that wrote and is ending, as its publication: keeps
  /// `make()`'s copy of the value as the version this moves to, then notifies and wakes.
  func keepSnapshot(_ make: () -> AnyObject?) {
    // The copy it replaces is freed after the lock: a value it alone held may run a
    // `deinit` that subscribes to this container, which takes the lock.
    let (replaced, old) = withLock {
      let replaced = snapshot
      snapshot = make()
      let old = update { $0.keepSnapshot() }.unsafelyUnwrapped
      snapshotVersion = old.keepSnapshot().unsafelyUnwrapped.version
      snapshotCount &+= 1
      return (replaced, old)
    }
    withExtendedLifetime(replaced) {}
    if old.publicationIsSlow { publishSlow(old) }
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
  ) -> (value: Value, version: UInt64, count: UInt64)? {
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
    after seen: UInt64, id: UInt64, isolation: isolated (any Actor)? = #isolation
  ) async {
    await withTaskCancellationHandler {
      await withUnsafeContinuation(isolation: isolation) { continuation in
        sw_mutex_lock(mutex)
        // `waiting` set with one atomic that also checks the version: a publication
        // either came before it (we see the new version and do not sleep) or after it
        // (it sees `waiting` and takes `mutex`, which we hold until we are listed).
        if Task.isCancelled || update({ $0.sleep(after: seen) }) == nil {
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

  /// Whether the Observation module tracks the container, with acquire ordering: if so,
  /// `notifier` is installed.
  @inlinable var isTracked: Bool { current.isTracked }

  /// Installs `make()`'s notifier on the first call: runs `markObserved`, so the
  /// container's writes mark themselves dirty, and only then sets `tracked`, so no
  /// tracked read can happen before its container publishes.
  @usableFromInline func installNotifier(_ make: () -> any ChangeNotifier, markObserved: () -> Void)
  {
    withLock {
      guard notifier == nil else { return }
      notifier = make()
      markObserved()
      apply(ChangeHubWord.tracking) { $0.track() }
    }
  }
}
