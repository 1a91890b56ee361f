import SingleWriterAtomics

/// Where writes that find the checkout busy are published: a lock-free stack, pushed
/// with one compare-and-exchange by any thread, and emptied whole by the checkout holder,
/// which reverses each batch into arrival order and runs it while its cache is hot
/// (flat combining). An enqueue takes no lock, so it never waits for the holder.
///
/// Taking the whole stack at once is what keeps it free of the ABA problem: the holder
/// never pops a single node that another thread may have freed and reused.
@usableFromInline
struct Inbox<Element> {
  @usableFromInline let head: UnsafeMutablePointer<sw_atomic_uptr>

  @inlinable init(_ head: UnsafeMutablePointer<sw_atomic_uptr>) { self.head = head }

  @usableFromInline
  final class Node {
    @usableFromInline let element: Element
    /// The node pushed before this one, as a retained opaque pointer, or 0.
    @usableFromInline @exclusivity(unchecked) var next: UInt = 0
    @inlinable init(_ element: Element) { self.element = element }
  }

  /// Publishes `element`. Release ordering: whoever takes it sees it whole.
  @inlinable func push(_ element: Element) {
    let node = Node(element)
    let address = UInt(bitPattern: Unmanaged.passRetained(node).toOpaque())
    var seen = sw_uptr_load(head)
    repeat { node.next = seen } while !sw_uptr_cas(head, &seen, address)
  }

  @inlinable var isEmpty: Bool { sw_uptr_load_acquire(head) == 0 }

  /// Empties the stack and appends its elements to `queue` in the order they were pushed.
  @inlinable func takeAll(into queue: inout FIFO<Element>) {
    var address = sw_uptr_exchange(head, 0)
    guard address != 0 else { return }
    // Reverse the chain (newest first) into oldest first, then hand over each element.
    var reversed: UInt = 0
    while address != 0 {
      let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: address)!)
      let next = node._withUnsafeGuaranteedRef { $0.next }
      node._withUnsafeGuaranteedRef { $0.next = reversed }
      reversed = address
      address = next
    }
    while reversed != 0 {
      let node = Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: reversed)!)
        .takeRetainedValue()
      reversed = node.next
      queue.append(node.element)
    }
  }

  /// Frees what is still in the stack; only when no thread can push any more.
  @inlinable func drop() {
    var queue = FIFO<Element>()
    takeAll(into: &queue)
  }
}
