/// One `changes()` call: the value when it subscribed, and how to read the newest one.
///
/// Alive as long as its sequence or an iterator is: it counts as one observer of the
/// container until then, and is the only thing a stream allocates.
@usableFromInline
final class ChangeSubscription<Element> {
  @usableFromInline let hub: ChangeHub
  /// Reads the newest element, or `nil` once the container is gone.
  @usableFromInline let read: () -> Element?
  /// Whether two elements are the same, for skipping repeats; `nil` delivers every change.
  @usableFromInline let isRepeat: ((Element, Element) -> Bool)?
  /// The element at subscription, and the version it belongs to.
  @usableFromInline let initial: Element
  @usableFromInline let initialVersion: UInt32
  /// Unregisters from the container, if it still exists.
  let leave: () -> Void

  init(
    hub: ChangeHub, initial: Element, version: UInt32, isRepeat: ((Element, Element) -> Bool)?,
    read: @escaping () -> Element?, leave: @escaping () -> Void
  ) {
    self.hub = hub
    self.initial = initial
    self.initialVersion = version
    self.isRepeat = isRepeat
    self.read = read
    self.leave = leave
  }

  deinit { leave() }
}

/// The iteration shared by both containers' `Changes` sequences.
@usableFromInline
struct ChangeCursor<Element> {
  @usableFromInline let subscription: ChangeSubscription<Element>
  /// The version the last delivered element belongs to.
  @usableFromInline var seen: UInt32
  /// The last delivered element, kept only when repeats are skipped.
  @usableFromInline var last: Element?
  @usableFromInline var started = false
  /// This cursor's id for the hub's sleeper list, taken at its first sleep.
  @usableFromInline var sleeperID: UInt64 = 0

  init(_ subscription: ChangeSubscription<Element>) {
    self.subscription = subscription
    seen = subscription.initialVersion
  }

  /// The next element: at once if a checkout changed the value since the last one,
  /// else after sleeping until one does. Resumed at most once per batch of checkouts,
  /// it then reads the newest value itself, so a slow consumer gets no backlog.
  mutating func next(isolation: isolated (any Actor)?) async -> Element? {
    let hub = subscription.hub
    if !started {
      started = true
      // The value at subscription, unless a checkout has replaced it since.
      var first = subscription.initial
      let now = hub.version
      if now != seen, let newer = subscription.read() {
        seen = now
        first = newer
      }
      if subscription.isRepeat != nil { last = first }
      return first
    }
    while true {
      // Version before value: a value read after a publication is at least that new.
      let now = hub.version
      if now != seen {
        seen = now
        guard let value = subscription.read() else { return nil }
        if let isRepeat = subscription.isRepeat {
          if let last, isRepeat(last, value) { continue }
          last = value
        }
        return value
      }
      if hub.isClosed || Task.isCancelled { return nil }
      if sleeperID == 0 { sleeperID = hub.makeSleeperID() }
      await hub.waitForChange(after: seen, id: sleeperID, isolation: isolation)
    }
  }
}
