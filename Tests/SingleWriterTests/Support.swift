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
