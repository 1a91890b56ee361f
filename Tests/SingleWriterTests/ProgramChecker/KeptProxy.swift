import SingleWriter

/// A proxy kept by a `writeNext` body for its caller (only while that call runs on the
/// same thread), or handed to a helper that takes it out to finish the write.
final class KeptProxy: Sendable {
  private struct State {
    var proxy: ThreadSafeWriterProxy<CheckedPair>?
    var accepting = true
  }
  private let state: Locked<State>
  private let thread: UInt

  init(_ proxy: ThreadSafeWriterProxy<CheckedPair>? = nil) {
    state = Locked(State(proxy: proxy))
    thread = StepMarker.thread
  }

  /// Keeps `proxy` if the caller still waits for it on this thread; `false` otherwise.
  func keep(_ proxy: ThreadSafeWriterProxy<CheckedPair>) -> Bool {
    guard StepMarker.thread == thread else { return false }
    return state.withLock { state in
      guard state.accepting else { return false }
      state.proxy = proxy
      return true
    }
  }

  /// Stops accepting and takes what was kept.
  func take() -> ThreadSafeWriterProxy<CheckedPair>? {
    state.withLock { state in
      state.accepting = false
      return state.proxy.take()
    }
  }
}
