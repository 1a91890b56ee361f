import Foundation

/// Runs `body` on a fresh thread with the given stack size and returns its result.
func runOnThread<R: Sendable>(
  stackSize: Int, _ body: @escaping @Sendable () -> R
) async -> R {
  await withCheckedContinuation { continuation in
    let thread = Thread { continuation.resume(returning: body()) }
    thread.stackSize = stackSize
    thread.start()
  }
}

/// A value behind an `NSLock`, for the tests' own bookkeeping across threads.
final class Locked<Value>: @unchecked Sendable {
  // Sendable: `value` is only touched under `lock`.
  private let lock = NSLock()
  private var value: Value
  init(_ value: Value) { self.value = value }
  func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    try lock.withLock { try body(&value) }
  }
}

/// An integer that threads share, for start lines and overlap counts; a stand-in for
/// `Atomic<Int>`, which needs macOS 15 and iOS 18. A lock orders at least as strongly as
/// the sequentially consistent operations it replaces.
final class Counter: Sendable {
  private let value: Locked<Int>

  init(_ value: Int = 0) { self.value = Locked(value) }

  /// Adds `amount` and returns the new value.
  @discardableResult
  func add(_ amount: Int) -> Int {
    value.withLock { value in
      value += amount
      return value
    }
  }

  /// Subtracts `amount` and returns the new value.
  @discardableResult
  func subtract(_ amount: Int) -> Int { add(-amount) }

  func load() -> Int { value.withLock { $0 } }

  func store(_ newValue: Int) { value.withLock { $0 = newValue } }

  /// Raises the value to `candidate` if that is larger, as one step.
  func raise(to candidate: Int) { value.withLock { $0 = max($0, candidate) } }
}
