/// Where a task suspended in `await write` or `checkout()` stands, typed: the task, its
/// cancellation handler and the thread serving the queue race to move it, and whoever
/// wins a transition acts on it (resumes the task, runs its body, hands it the writer).
/// "How the hand-off works" gives the table.
@usableFromInline
enum TaskWaiterState: UInt32, StateWord, CaseIterable {
  /// Made, not queued yet.
  case new
  /// Queued, with its continuation stored.
  case waiting
  /// Reached by the queue: its write runs now, or the task was woken to claim the writer.
  case granted
  /// Cancelled while new or waiting (only a wait that gives up on cancellation).
  case cancelled
  /// A woken `checkout()` runs and asks for the writer; the server hands it over.
  case claimed
  /// The server stopped waiting for the claim: the task queues again, at the front.
  case expired
  /// A `checkout()` owns the writer now.
  case handed
  /// An async write's body ran on the serving thread; the value is whole again.
  case done

  @usableFromInline
  enum Event: CaseIterable, Sendable {
    /// The task stored its continuation and queues.
    case queue
    /// The task was cancelled: before it queued, or while it waits.
    case cancel
    /// The server reached the entry.
    case reach
    /// The woken `checkout()` task asks for the writer.
    case claim
    /// The server's claim window ran out.
    case expire
    /// The server hands the writer to a task that claimed it.
    case handOver
    /// The task's own enqueue took the free writer: it is handed over with no claim.
    case handOverUnclaimed
    /// The server ran an async write's body.
    case finish
  }

  @inlinable func row(_ event: Event) -> TransitionRow {
    switch event {
    case .queue: .taskQueue
    case .cancel: self == .new ? .taskCancelNew : .taskCancelWaiting
    case .reach: .taskReach
    case .finish: .taskFinish
    case .claim: .taskClaim
    case .expire: .taskExpire
    case .handOver: .taskHandOver
    case .handOverUnclaimed: .taskHandOverUnclaimed
    }
  }

  @inlinable func after(_ event: Event) -> TaskWaiterState? {
    switch (self, event) {
    case (.new, .queue): .waiting
    case (.new, .cancel), (.waiting, .cancel): .cancelled
    case (.waiting, .reach): .granted
    case (.granted, .claim): .claimed
    case (.granted, .expire): .expired
    case (.claimed, .handOver), (.waiting, .handOverUnclaimed): .handed
    case (.granted, .finish): .done
    default: nil
    }
  }
}
