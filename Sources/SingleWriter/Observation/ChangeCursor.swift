/// The iteration behind ``ChangeStream``, both containers' `Changes`.
///
/// It ends, returning `nil` from then on, in three cases. The task is cancelled: at
/// once, even with a newer value waiting, as AsyncChannel's and the buffers' iterators
/// drop what they hold. The container is freed: after one last element, the
/// container's final value, unless this iterator delivered that version already (or,
/// skipping repeats, an equal value). It was made after the container was freed: at
/// once, since nothing was produced for it.
@usableFromInline
struct ChangeCursor<Element> {
  @usableFromInline let subscription: ChangeSubscription<Element>
  /// The version the last delivered element belongs to.
  @usableFromInline var seen: UInt64
  /// The last delivered element, kept only when repeats are skipped.
  @usableFromInline var last: Element?
  @usableFromInline var started = false
  /// Returned `nil`: every later call does too.
  @usableFromInline var finished: Bool
  /// The hub's count of snapshots when this cursor last delivered: only a later one may
  /// be delivered, never one older than a value read directly.
  @usableFromInline var snapshots: UInt64 = 0
  /// This cursor's id for the hub's sleeper list, taken at its first sleep.
  @usableFromInline var sleeperID: UInt64 = 0

  init(_ subscription: ChangeSubscription<Element>) {
    self.subscription = subscription
    seen = subscription.initialVersion
    snapshots = subscription.initialSnapshots
    finished = subscription.hub.isClosed
  }

  /// The next element: at once if a checkout changed the value since the last one,
  /// else after sleeping until one does. Resumed at most twice per batch of checkouts
  /// (the second time to wait out a checkout it found half done), it then reads the
  /// newest value itself, so a slow consumer gets no backlog.
  mutating func next(isolation: isolated (any Actor)?) async -> Element? {
    let hub = subscription.hub
    while !finished, !Task.isCancelled {
      if hub.isClosed { return takeLast() }
      // Version before value: a value read after a publication is at least that new.
      let now = hub.version
      if now != seen || !started {
        // The value at subscription first, unless a checkout has replaced it since.
        var value = subscription.initial
        var version = now
        if now != seen || value == nil {
          switch subscription.read() {
          case .value(let newer):
            value = newer
            snapshots = hub.keptSnapshots  // every one kept so far is no newer
          case .halfDone:
            // A checkout that has written is still held. An earlier end may have kept a
            // copy newer than the last delivered; if not, ask the next end for one, and
            // wait for it to publish.
            if let kept = subscription.readSnapshot(snapshots) {
              value = kept.value
              version = kept.version
              snapshots = kept.count
            } else {
              hub.wantSnapshot()
              await sleep(after: now, isolation: isolation)
              continue
            }
          case .gone:
            // The container is being freed: its `deinit` is about to close the hub,
            // keeping the final value. Wait for that, then take it above.
            await sleep(after: now, isolation: isolation)
            continue
          }
        }
        seen = version
        if deliver(value.unsafelyUnwrapped) { return value }
        continue
      }
      await sleep(after: seen, isolation: isolation)
    }
    finished = true
    return nil
  }

  /// Whether to deliver `value`, recording it if so: the first element always, later
  /// ones unless repeats are skipped and it equals the last one delivered.
  mutating func deliver(_ value: Element) -> Bool {
    defer { started = true }
    guard let isRepeat = subscription.isRepeat else { return true }
    if started, let last, isRepeat(last, value) { return false }
    last = value
    return true
  }

  /// The end of a stream whose container is gone: its final value, if this iterator
  /// has not delivered that version yet, then nothing.
  mutating func takeLast() -> Element? {
    finished = true
    // No publication follows the close: this is the final value's version.
    let final = subscription.hub.version
    guard final != seen || !started,
      let value = subscription.readLast(), deliver(value)
    else { return nil }
    seen = final
    return value
  }

  /// Sleeps until the version moves past `version`, the hub closes or the task is
  /// cancelled.
  mutating func sleep(after version: UInt64, isolation: isolated (any Actor)?) async {
    if sleeperID == 0 { sleeperID = subscription.hub.makeSleeperID() }
    await subscription.hub.waitForChange(after: version, id: sleeperID, isolation: isolation)
  }
}
