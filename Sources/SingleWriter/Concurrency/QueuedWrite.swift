/// A queued async write: its body, for the serving thread, and its result, for the task.
@usableFromInline
final class QueuedWrite<Value: ~Copyable, R, E: Error>: @unchecked Sendable {
  // Sendable: the task sets `body` before queueing and clears it after it was resumed or
  // cancelled; the serving thread calls it, and writes `result`, only after winning the
  // waiter's transition to `granted`, and before resuming the task, which orders them.
  // The body and its result are `sending`: no one else keeps access to them.
  @usableFromInline var body: ((inout sending Value) throws(E) -> sending R)?
  @usableFromInline var result: Result<R, E>?

  @usableFromInline init() {}

  @usableFromInline func run(_ container: ThreadSafeSingleWriter<Value>) {
    let body = self.body.unsafelyUnwrapped
    result = Result { () throws(E) -> R in try body(&container.storage.pointee) }
  }

  /// The result, which the task owns once it is resumed.
  @usableFromInline func takeResult() -> sending Result<R, E>? {
    nonisolated(unsafe) let taken = result.take()
    return taken
  }
}
