import SingleWriterAtomics

/// Which harness step is running on a thread: every step sets one at its start (see
/// `StepMarker`), so that a body can tell on whose behalf its thread is running it.
final class StepMark: Sendable {
  let id: Int
  /// What the step is, for failure messages.
  let label: String
  /// An `await write` or `writeUnlessCancelled` call, until its own body begins.
  let isAwaitWrite: Bool
  /// The task (or thread) that made the step: the thread-local mark outlives its
  /// suspension, while other tasks run on that thread.
  let holder = sw_current_holder()
  private let begunFlag = Locked(false)

  init(id: Int, label: String, isAwaitWrite: Bool = false) {
    self.id = id
    self.label = label
    self.isAwaitWrite = isAwaitWrite
  }

  /// Whether the await's own body has begun (on any thread).
  var begun: Bool {
    get { begunFlag.withLock { $0 } }
    set { begunFlag.withLock { $0 = newValue } }
  }
}
