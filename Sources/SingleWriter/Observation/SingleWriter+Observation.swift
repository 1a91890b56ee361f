import Observation

// Observing a SingleWriter: the same `changes()` and `trackedRead` as the thread-safe
// container, on the same `ChangeHub`. The container sets `isDirty` on every write and,
// while `isObserved`, calls `publishIfDirty` as each checkout ends.

extension SingleWriter {
  /// The hub, made by the first observer.
  var observationHub: ChangeHub {
    if let hub { return hub }
    let hub = ChangeHub()
    self.hub = hub
    return hub
  }

  /// Called as each observed checkout ends: a publication if the checkout wrote.
  /// Inlinable, so that it is specialized where the checkout ends.
  @inlinable
  func publishIfDirty() {
    guard isDirty else { return }
    isDirty = false
    // Guaranteed, not retained: the container owns the hub and outlives this call.
    Unmanaged.passUnretained(hub.unsafelyUnwrapped)._withUnsafeGuaranteedRef { hub in
      // A consumer that found a stream of checkouts half done gets this copy, as this
      // checkout's publication.
      if hub.wantsSnapshot { keepSnapshot(in: hub) } else { hub.publishConfined() }
    }
  }

  /// Turns publishing on or off to match the observers. Writes that ended before the
  /// first observer are in the value it reads, so they are not published again; a
  /// checkout in progress, say the `tryWrite` whose body subscribes, counts as dirty,
  /// since its body may write on without marking each write.
  func updateObserved(_ hub: ChangeHub) {
    let observed = hub.withLock { hub.subscriptions != 0 || hub.notifier != nil }
    if observed, !isObserved { isDirty = isCheckedOut }
    isObserved = observed
  }

  func subscriptionArrived() {
    let hub = observationHub
    hub.withLock { hub.subscriptions += 1 }
    updateObserved(hub)
  }

  func subscriptionLeft() {
    guard let hub else { return }
    hub.withLock { hub.subscriptions -= 1 }
    updateObserved(hub)
  }

  /// How many `changes()` subscriptions are live; for tests.
  var subscriberCount: Int {
    guard let hub else { return 0 }
    return hub.withLock { hub.subscriptions }
  }

  /// Keeps the value in `hub` for a consumer that found it half done; out of line, as it
  /// runs only at a consumer's request.
  @usableFromInline func keepSnapshot(in hub: ChangeHub) {
    hub.keepSnapshot { LastValue(storage.pointee) }
  }

  /// The value for a consumer: as the last checkout ended with it. While a held proxy has
  /// written since the last publication (say across an `await` in an actor's method), the
  /// consumer waits for the checkout's end instead of reading a half-done value. `dirty`
  /// may be older than the subscription: then the consumer only waits for an end it would
  /// have had anyway.
  func readWhole<Element>(_ transform: (Value) -> Element) -> ChangeRead<Element> {
    if isCheckedOut, isDirty { return .halfDone }
    return .value(transform(read))
  }

  /// Subscribes: marks the container observed, then reads the version before the value,
  /// so a checkout that ends later either is in the value already or moves the version.
  func subscribe<Element>(
    _ transform: @escaping (Value) -> Element, isRepeat: ((Element, Element) -> Bool)?
  ) -> Changes<Element> {
    subscriptionArrived()
    let hub = observationHub
    let version = hub.version
    let subscription = ChangeSubscription(
      hub: hub, initial: readWhole(transform), version: version, isRepeat: isRepeat,
      read: { [weak self] in self?.readWhole(transform) ?? .gone },
      readLast: { hub.lastValue(of: Value.self).map(transform) },
      readSnapshot: {
        hub.snapshot(of: Value.self, after: $0).map { (transform($0.value), $0.version, $0.count) }
      },
      leave: { [weak self] in self?.subscriptionLeft() })
    return Changes(subscription)
  }

  /// The current value, then the value after each checkout or closure write that wrote
  /// something, in order.
  ///
  /// ```swift
  /// Task { @MainActor in
  ///   for await user in currentUser.changes() { render(user) }
  /// }
  /// ```
  ///
  /// Same semantics as `ThreadSafeSingleWriter.changes()`: a slow consumer is resumed
  /// at most twice per batch of checkouts and reads the newest value itself; a checkout end costs
  /// at most a load and a store however many streams are idle. Iterate it where the container
  /// lives, for example in a `@MainActor` task: the loop resumes there directly, with no
  /// hop per value. When `Value` is `Equatable`, the overload that skips repeats is
  /// chosen instead.
  ///
  /// The stream does not keep the container alive. An iterator ends, returning `nil`
  /// from then on:
  /// - When the container is freed, after delivering its final value: the value the
  ///   last checkout left, unless this iterator has delivered it already (or, when
  ///   repeats are skipped, a value equal to it). An iterator made after the container
  ///   is gone ends at once.
  /// - When its task is cancelled, at once: the next `next()` returns `nil` even if a
  ///   newer value waits, and a `next()` that is waiting returns `nil`.
  public func changes() -> Changes<Value> {
    subscribe({ $0 }, isRepeat: nil)
  }

  /// A stream of one property of the value that skips repeats. It ends as `changes()`
  /// does.
  ///
  /// ```swift
  /// for await name in state.changes(of: \.user.name) { title = name }
  /// ```
  public func changes<Property: Equatable>(of property: KeyPath<Value, Property>) -> Changes<
    Property
  > {
    subscribe({ $0[keyPath: property] }, isRepeat: { $0 == $1 })
  }

  /// The values a ``SingleWriter`` takes, from `changes()` or ``changes(of:)``.
  ///
  /// Not `Sendable`, like its container: iterate it in the isolation the container
  /// lives in. An iterator ends when its task is cancelled, or after the container's
  /// final value once the container is freed; see `changes()`.
  public typealias Changes<Element> = ChangeStream<SingleWriter<Value>, Element>
}

extension SingleWriter where Value: Equatable {
  /// The current value, then each new value that differs from the last one delivered.
  ///
  /// ```swift
  /// for await settings in store.changes() { apply(settings) }
  /// ```
  ///
  /// For the value after every checkout that wrote, equal or not, use
  /// `changes(skippingRepeats: false)`.
  ///
  /// The stream does not keep the container alive. An iterator ends, returning `nil`
  /// from then on, when the container is freed, after delivering the final value unless
  /// it equals the last one delivered; at once if it was made after the container was
  /// freed; and at once when its task is cancelled, even if a newer value waits.
  public func changes() -> Changes<Value> {
    changes(skippingRepeats: true)
  }

  /// The current value, then the value after each checkout that wrote; repeats of the
  /// last delivered value are skipped only if `skippingRepeats`.
  ///
  /// ```swift
  /// for await value in box.changes(skippingRepeats: false) { log(value) }
  /// ```
  public func changes(skippingRepeats: Bool) -> Changes<Value> {
    guard skippingRepeats else { return subscribe({ $0 }, isRepeat: nil) }
    return subscribe({ $0 }, isRepeat: { $0 == $1 })
  }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension SingleWriter: Observable {}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension SingleWriter {
  /// The current value, like ``read``, and registered with the Observation module, so
  /// that `withObservationTracking`, SwiftUI's `body` and `Observations` are told when a
  /// checkout that wrote ends.
  ///
  /// ```swift
  /// @MainActor @Observable final class Model {
  ///   let state = SingleWriter(value: AppState())
  ///   var title: String { state.trackedRead.title }  // SwiftUI re-renders on change
  /// }
  /// ```
  ///
  /// Observers are told once per checkout, at its end, never per write through a held
  /// proxy, and never for a proxy's checkout that only read (unless this first tracked
  /// read came while it was held: it may have written before); a closure write counts. The first tracked read makes the
  /// container observed for good. ``read`` registers nothing and stays a plain load.
  @inlinable
  public var trackedRead: Value {
    tracker.access(self)
    return read
  }

  /// The container's tracker, installed by the first tracked read.
  @inlinable
  var tracker: ObservationTracker<SingleWriter<Value>, Value> {
    if hub?.notifier == nil { installTracker() }
    return unsafeDowncast(
      hub.unsafelyUnwrapped.notifier.unsafelyUnwrapped as AnyObject,
      to: ObservationTracker<SingleWriter<Value>, Value>.self)
  }

  /// Installs the tracker on the first tracked read.
  @usableFromInline
  func installTracker() {
    let hub = observationHub
    hub.installNotifier {
      ObservationTracker(subject: self, keyPath: \.trackedRead)
    } markObserved: {
    }
    updateObserved(hub)
  }
}
