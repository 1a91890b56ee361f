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
