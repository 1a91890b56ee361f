import Observation

// Observing a ThreadSafeSingleWriter: `changes()` streams, and Observation-module
// tracking through `trackedRead`. Both hang off the container's `ChangeHub`; the
// container only marks writes `dirty` while the `observed` bit is set, and calls
// `publishIfDirty` at each checkout end while it is.

extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// Called by the checkout holder as each served entry ends while `observed` is set, with
  /// no library lock held: if it wrote (`wrote`: it marked `proxy_wrote`, which the caller
  /// took), publishes. Checkouts are ordered, so publications are too.
  @inlinable
  func publishIfDirty(wrote: Bool) {
    let dirty = lock.word.isDirty && lock.update({ $0.takeDirty() }) != nil
    guard dirty || wrote else { return }
    // Still the holder: the value is as this checkout ended it. A consumer that found a
    // stream of checkouts half done gets this copy (`keepLast` is set by its subscription),
    // as this checkout's publication.
    if hub.wantsSnapshot { hub.keepSnapshotOfLast() } else { hub.publish() }
  }

  /// Counts one more `changes()` subscription; the first observer sets `observed`, so
  /// every later write marks itself `dirty`.
  func subscriptionArrived() {
    hub.withLock {
      if hub.subscriptions == 0, hub.notifier == nil {
        lock.observe()
      }
      hub.subscriptions += 1
    }
  }

  /// Counts one subscription fewer; the last observer to leave clears `observed`, and
  /// unobserved writes cost nothing again. Tracking, once installed, stays.
  func subscriptionLeft() {
    hub.withLock {
      hub.subscriptions -= 1
      if hub.subscriptions == 0, hub.notifier == nil {
        lock.update { $0.unobserve() }
      }
    }
  }

  /// How many `changes()` subscriptions are live; for tests.
  var subscriberCount: Int { hub.withLock { hub.subscriptions } }

  /// Whether checkout ends publish; for tests.
  package var isObserved: Bool { lock.word.isObserved }
}

extension ThreadSafeSingleWriter where Value: Sendable {
  /// The value for a consumer: as the last checkout ended with it, never half done. A
  /// plain ``read`` sees each write through a held proxy at once; a consumer must not, so
  /// while a held checkout has written since the last publication it reads nothing and
  /// waits for that checkout's end, which publishes. Writers pay nothing for this.
  func readWhole<Element>(_ transform: (Value) -> Element) -> ChangeRead<Element> {
    lock.beginRead()
    defer {
      lock.endRead()
      _fixLifetime(self)  // read through `storage`, which the container frees
    }
    if lock.mayBeHalfDone { return .halfDone }
    return .value(transform(storage.pointee))
  }

  /// Subscribes, never waiting on the writer: the `observed` bit is set under the hub's
  /// own lock, then the version is read before the value, so a checkout that ends after
  /// this either is in the value already or moves the version past it.
  func subscribe<Element: Sendable>(
    _ transform: @escaping @Sendable (Value) -> Element,
    isRepeat: (@Sendable (Element, Element) -> Bool)?
  ) -> Changes<Element> {
    subscriptionArrived()
    // The value `deinit` leaves for the subscribers that have not had it yet; read there
    // before `storage` is freed.
    hub.withLock {
      if hub.keepLast == nil { hub.keepLast = { [storage] in LastValue(storage.pointee) } }
    }
    let version = hub.version
    let subscription = ChangeSubscription(
      hub: hub, initial: readWhole(transform), version: version, isRepeat: isRepeat,
      read: { @Sendable [weak self] in self?.readWhole(transform) ?? .gone },
      readLast: { @Sendable [hub] in hub.lastValue(of: Value.self).map(transform) },
      readSnapshot: { @Sendable [hub] in
        hub.snapshot(of: Value.self, after: $0).map { (transform($0.value), $0.version, $0.count) }
      },
      leave: { @Sendable [weak self] in self?.subscriptionLeft() })
    return Changes(subscription)
  }

  /// The current value, then the value after each checkout or closure write that wrote
  /// something, in order.
  ///
  /// ```swift
  /// for await user in currentUser.changes() {
  ///   render(user)
  /// }
  /// ```
  ///
  /// A consumer slower than the writers is resumed at most twice per batch of checkouts and gets
  /// the newest value, not a backlog. A checkout end that wrote costs one load of a
  /// shared word until a consumer looks, and one atomic operation after it does, however
  /// many streams are idle. A consumer may write back to the container.
  ///
  /// The stream does not keep the container alive. An iterator ends, returning `nil`
  /// from then on:
  /// - When the container is freed, after delivering its final value: the value the
  ///   last checkout left, unless this iterator has delivered it already (or, when
  ///   repeats are skipped, a value equal to it). An iterator made after the container
  ///   is gone ends at once.
  /// - When its task is cancelled, at once: the next `next()` returns `nil` even if a
  ///   newer value waits, and a `next()` that is waiting returns `nil`.
  ///
  /// Iterated from a `@MainActor` task, the loop resumes on the main actor directly.
  /// When `Value` is `Equatable`, the overload that skips repeats is chosen instead.
  public func changes() -> Changes<Value> {
    subscribe({ $0 }, isRepeat: nil)
  }

  /// A stream of one property of the value that skips repeats: a view of `\.user.name`
  /// is not woken by writes to the cart. It ends as `changes()` does.
  ///
  /// ```swift
  /// for await name in state.changes(of: \.user.name) {
  ///   title = name
  /// }
  /// ```
  public func changes<Property: Equatable & Sendable>(
    of property: KeyPath<Value, Property> & Sendable
  ) -> Changes<Property> {
    subscribe({ $0[keyPath: property] }, isRepeat: { $0 == $1 })
  }
}

extension ThreadSafeSingleWriter where Value: Sendable & Equatable {
  /// The current value, then each new value that differs from the last one delivered.
  ///
  /// ```swift
  /// for await settings in store.changes() { apply(settings) }
  /// ```
  ///
  /// A write that leaves the value as it was, say `tryWrite { _ in }`, wakes nobody. For
  /// the value after every checkout that wrote, equal or not, use
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

extension ThreadSafeSingleWriter {
  /// The values a ``ThreadSafeSingleWriter`` takes, from `changes()` or
  /// ``changes(of:)``.
  ///
  /// Each iterator starts with the value at the `changes()` call, or a newer one, and the
  /// subscription lasts until the sequence and its iterators are gone. An iterator ends
  /// when its task is cancelled, or after the container's final value once the
  /// container is freed; see `changes()`.
  public typealias Changes<Element: Sendable> = ChangeStream<
    ThreadSafeSingleWriter<Value>, Element
  >
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension ThreadSafeSingleWriter: Observable {}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension ThreadSafeSingleWriter where Value: Sendable {
  /// The current value, like ``read``, and registered with the Observation module, so
  /// that `withObservationTracking`, SwiftUI's `body` and `Observations` are told when a
  /// checkout that wrote ends.
  ///
  /// ```swift
  /// @Observable final class Model {
  ///   let state = ThreadSafeSingleWriter(value: AppState())
  ///   var title: String { state.trackedRead.title }  // SwiftUI re-renders on change
  /// }
  /// ```
  ///
  /// Observers are told once per checkout that wrote, at its end, never per write through
  /// a held proxy, and never for a proxy's checkout that only read (even one held when
  /// this first tracked read came); a closure write counts. The first tracked read makes the
  /// container observed for good: each checkout end then costs one atomic operation and a
  /// notification. ``read`` registers nothing and stays as cheap as before.
  @inlinable
  public var trackedRead: Value {
    tracker.access(self)
    return read
  }

  /// The container's tracker, installed by the first tracked read.
  @inlinable
  var tracker: ObservationTracker<ThreadSafeSingleWriter<Value>, Value> {
    if !hub.isTracked { installTracker() }
    return unsafeDowncast(
      hub.notifier.unsafelyUnwrapped as AnyObject,
      to: ObservationTracker<ThreadSafeSingleWriter<Value>, Value>.self)
  }

  /// Installs the tracker on the first tracked read, from any number of threads at once.
  @usableFromInline
  func installTracker() {
    hub.installNotifier {
      ObservationTracker(subject: self, keyPath: \.trackedRead)
    } markObserved: {
      lock.observe()
    }
  }
}
