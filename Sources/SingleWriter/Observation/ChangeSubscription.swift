/// One `changes()` call: the value when it subscribed, and how to read the newest one.
///
/// Alive as long as its sequence or an iterator is: it counts as one observer of the
/// container until then, and is the only thing a stream allocates.
@usableFromInline
final class ChangeSubscription<Element> {
  @usableFromInline let hub: ChangeHub
  /// Reads the newest element, unless a checkout is part-way through it or the container
  /// is being freed.
  @usableFromInline let read: () -> ChangeRead<Element>
  /// Reads the element the container left in the hub when it was freed: `nil` until then.
  @usableFromInline let readLast: () -> Element?
  /// Reads the snapshot a checkout's end kept, with its version and count, if it was kept
  /// after the given count.
  @usableFromInline let readSnapshot: (UInt64) -> (value: Element, version: UInt64, count: UInt64)?
  /// Whether two elements are the same, for skipping repeats; `nil` delivers every change.
  @usableFromInline let isRepeat: ((Element, Element) -> Bool)?
  /// The element at subscription (`nil` if a checkout was part-way through it then), and
  /// the version it belongs to.
  @usableFromInline let initial: Element?
  @usableFromInline let initialVersion: UInt64
  /// The hub's count of snapshots at subscription: older ones are older than `initial`.
  @usableFromInline let initialSnapshots: UInt64
  /// Unregisters from the container, if it still exists.
  let leave: () -> Void

  init(
    hub: ChangeHub, initial: ChangeRead<Element>, version: UInt64,
    isRepeat: ((Element, Element) -> Bool)?,
    read: @escaping () -> ChangeRead<Element>, readLast: @escaping () -> Element?,
    readSnapshot: @escaping (UInt64) -> (value: Element, version: UInt64, count: UInt64)?,
    leave: @escaping () -> Void
  ) {
    self.hub = hub
    if case .value(let element) = initial { self.initial = element } else { self.initial = nil }
    self.initialVersion = version
    self.initialSnapshots = hub.keptSnapshots
    self.isRepeat = isRepeat
    self.read = read
    self.readLast = readLast
    self.readSnapshot = readSnapshot
    self.leave = leave
  }

  deinit { leave() }
}
