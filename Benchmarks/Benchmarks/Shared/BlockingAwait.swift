import Dispatch

/// Runs `body` in a detached task and blocks this thread until it returns: how a tool's
/// synchronous harness reads an actor's state (a final count) after a sample.
public func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
  let result = ResultBox<T>()
  let done = DispatchSemaphore(value: 0)
  Task.detached {
    result.value = await body()
    done.signal()
  }
  done.wait()
  return result.value!
}

/// The result of `blockingAwait`'s task.
private final class ResultBox<T>: @unchecked Sendable {
  // Unchecked: written by one task before a semaphore signal, read after the wait.
  var value: T?
}
