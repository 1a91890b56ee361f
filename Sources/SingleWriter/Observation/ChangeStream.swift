/// The values a container takes, from its `changes()` or `changes(of:)`: spelled
/// ``SingleWriter/Changes`` and ``ThreadSafeSingleWriter/Changes``.
///
/// Each iterator starts with the value at the `changes()` call, or a newer one, and the
/// subscription lasts until the sequence and its iterators are gone. An iterator ends
/// when its task is cancelled, or after the container's final value once the container
/// is freed; see `changes()`.
///
/// `Container` only says whose values these are: the stream is `Sendable` when its
/// container is, so a ``SingleWriter``'s is iterated in the isolation the container
/// lives in.
public struct ChangeStream<Container, Element>: AsyncSequence {
  public typealias Failure = Never
  @usableFromInline let subscription: ChangeSubscription<Element>

  init(_ subscription: ChangeSubscription<Element>) { self.subscription = subscription }

  public func makeAsyncIterator() -> Iterator { Iterator(cursor: ChangeCursor(subscription)) }

  /// Reads the newest value each time it is resumed.
  public struct Iterator: AsyncIteratorProtocol {
    public typealias Failure = Never
    @usableFromInline var cursor: ChangeCursor<Element>

    init(cursor: ChangeCursor<Element>) { self.cursor = cursor }

    /// The next value, or `nil` once the container is gone and its final value
    /// delivered, or the task is cancelled.
    public mutating func next() async -> Element? {
      await cursor.next(isolation: nil)
    }

    /// The next value, resuming in the caller's isolation: no hop to another executor.
    public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
      await cursor.next(isolation: actor)
    }
  }
}

// Sendable when the container is: the subscription's fields are immutable, and a
// `ThreadSafeSingleWriter`'s `subscribe` builds its closures `@Sendable`. A
// `SingleWriter`'s stream, like the container, stays where it was made.
extension ChangeStream: @unchecked Sendable where Container: Sendable, Element: Sendable {}
