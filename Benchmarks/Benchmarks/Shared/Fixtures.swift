import Foundation
import Synchronization

/// The value every write suite increments: small, trivially copyable.
public struct Counter: Sendable, Equatable {
  /// The field the benchmarks increment.
  public var a = 0
  /// A second field, so the value is more than one word.
  public var b = 0
  /// A zero counter.
  public init() {}
}

/// One small heap object: the unit a checkout's cost is compared against.
public final class Small {
  /// Payload, so the object is not empty.
  public var x = 0
  /// A new object.
  public init() {}
}

/// Allocates one `Small`; out of line so the allocation cannot be removed.
@inline(never)
public func makeSmall() -> Small {
  Small()
}

/// Holds a `weak` reference, as the article's container does to its proxy.
public final class WeakHolder {
  /// The weakly held object.
  public weak var object: Small?
  /// An empty holder.
  public init() {}
}

/// A `Counter` in a class, so that lock-based references keep it in memory
/// (a local `var` could live in a register across the loop).
public final class CounterBox: @unchecked Sendable {
  // Unchecked: every access in the suites is under the lock the row measures.
  /// The protected value.
  public var value = Counter()
  /// A zero counter.
  public init() {}
}

/// Runs `body(index)` on `count` new threads at once and returns when all have
/// finished. The threads wait for each other before starting, so the bodies
/// overlap; thread creation is outside the overlap.
public func runConcurrently(
  threads count: Int,
  stackSize: Int = 8 << 20,
  _ body: @escaping @Sendable (Int) -> Void
) {
  let ready = StartLine(count, yieldEvery: 1)
  let done = DispatchGroup()
  for index in 0..<count {
    done.enter()
    let thread = Thread {
      ready.arriveAndWait()
      body(index)
      done.leave()
    }
    thread.stackSize = stackSize
    thread.start()
  }
  done.wait()
}

/// Runs `body` on a new thread with an 8 MiB stack (the usual main-thread size)
/// and waits for it: the article's recursive drain needs a known stack.
public func runOnBigStack(_ body: @escaping @Sendable () -> Void) {
  runConcurrently(threads: 1) { _ in body() }
}
