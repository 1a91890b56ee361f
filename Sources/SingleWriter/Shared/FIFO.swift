/// A first-in, first-out queue with amortized O(1) `append` and `popFirst`.
///
/// An array plus a read index: popping advances the index instead of shifting
/// the array, and the consumed prefix is dropped once it is at least half the
/// storage, so each element is moved at most once on average.
@usableFromInline
struct FIFO<Element> {
  @usableFromInline var storage: ContiguousArray<Element?> = []
  @usableFromInline var head = 0

  @inlinable init() {}

  @inlinable var isEmpty: Bool { head == storage.count }

  @inlinable var count: Int { storage.count - head }

  @inlinable var first: Element? { head < storage.count ? storage[head] : nil }

  @inlinable mutating func append(_ element: Element) {
    storage.append(element)
  }

  /// Puts `element` first: O(1) after a pop, O(n) otherwise; for rare retries.
  @inlinable mutating func prepend(_ element: Element) {
    if head > 0 {
      head -= 1
      storage[head] = element
    } else {
      storage.insert(element, at: 0)
    }
  }

  @inlinable mutating func popFirst() -> Element? {
    guard head < storage.count else { return nil }
    let element = storage[head].take()
    head += 1
    if head == storage.count {
      // Keep a small buffer for steady enqueue/dequeue churn; give back a big one.
      storage.removeAll(keepingCapacity: storage.capacity <= 1024)
      head = 0
    } else if head >= 1024, head * 2 >= storage.count {
      storage.removeFirst(head)
      head = 0
    }
    return element
  }

  /// Calls `body` on each element, oldest first.
  @inlinable func forEach(_ body: (Element) -> Void) {
    for index in head..<storage.count { body(storage[index].unsafelyUnwrapped) }
  }
}
