// THE ARTICLE'S BASELINE — measured against, never used by the library.
//
// This re-creates, in this package's own code, the algorithm of the article that
// SingleWriter comes from, so the suites can show what its design costs:
//
// - the container tracks its proxy through a `weak` reference (a side-table
//   allocation on the first weak store to each proxy);
// - each proxy carries two closures: one that pushes a copy of the whole value
//   back into the container after every write (`didSet`), one that runs on release;
// - waiting writes are queued with `insert(at: 0)` and taken with `popLast()`,
//   so each enqueue moves every element already queued;
// - the queue drains by recursion: a proxy's `deinit` runs the next queued write,
//   whose proxy's `deinit` runs the next, so each queued write costs stack.
//
// It is public and not `@inlinable`, as it would be in a user's module: every
// suite calls it across a module boundary, unspecialized.

/// The article's single-writer container (baseline for the benchmarks only).
public final class ArticleSingleWriter<Value> {
  private var value: Value
  private var waiting: [(ArticleWriterProxy<Value>) -> Void] = []
  private weak var current: ArticleWriterProxy<Value>?

  /// Wraps `value`.
  public init(value: Value) {
    self.value = value
  }

  /// A copy of the value.
  public var read: Value { value }

  /// A new proxy holding a copy of the value, or `nil` while one is alive.
  public var writer: ArticleWriterProxy<Value>? {
    if current != nil { return nil }
    let proxy = ArticleWriterProxy(
      copy: value,
      publish: { self.value = $0 },
      released: { self.runNextWaiting() }
    )
    current = proxy
    return proxy
  }

  /// Runs `body` now if no proxy is alive, or queues it at the front of the array.
  public func writeNext(_ body: @escaping (ArticleWriterProxy<Value>) -> Void) {
    if let proxy = writer {
      body(proxy)
    } else {
      waiting.insert(body, at: 0)
    }
  }

  // Called from a dying proxy's `deinit`; the new proxy dies at the end of this
  // call, and its `deinit` calls here again: one level of recursion per write.
  private func runNextWaiting() {
    if let body = waiting.popLast(), let proxy = writer {
      body(proxy)
    }
  }
}

/// The article's proxy: a copy of the value, published back after each write.
public final class ArticleWriterProxy<Value> {
  /// The proxy's own copy; every mutation copies it back into the container.
  public var write: Value {
    didSet { publish(write) }
  }
  private let publish: (Value) -> Void
  private let released: () -> Void

  init(copy: Value, publish: @escaping (Value) -> Void, released: @escaping () -> Void) {
    self.write = copy
    self.publish = publish
    self.released = released
  }

  deinit {
    released()
  }
}
