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
  /// Reached by the queue: its write runs now.
  case granted
  /// Cancelled while new or waiting (only a wait that gives up on cancellation).
  case cancelled
  /// A `checkout()` was handed the writer while its task sleeps: it holds it, not yet
  /// claimed.
  case offered
  /// The task ran and claimed the writer it was offered: it holds it for good.
  case claimed
  /// A thread blocked in `withWriter` took the writer back from an offer that its task,
  /// still not running, left unclaimed for a while, and put the entry back at the front
  /// of the queue: the task, once it runs, waits again (`rearm`), unless it is offered the
  /// writer again first.
  case expired
  /// An async write's body ran on the serving thread; the value is whole again.
  case done

  @usableFromInline
  enum Event: CaseIterable, Sendable {
    /// The task stored its continuation and queues.
    case queue
    /// The task was cancelled: before it queued, or while it waits.
    case cancel
    /// The server reached an async write's or a `drained()` entry.
    case reach
    /// The server reached a `checkout()`'s entry, or the task's own enqueue took the free
    /// writer: the writer is offered to the task (resumed if it was waiting; one whose
    /// offer was taken back and that has not waited again yet claims it when it runs).
    case offer
    /// The task runs and claims the writer it was offered.
    case claim
    /// A thread blocked in `withWriter` takes back an offer left unclaimed too long.
    case expire
    /// A task whose offer was taken back waits again for its entry, at the front.
    case rearm
    /// The server ran an async write's body.
    case finish
  }

  @inlinable func row(_ event: Event) -> TransitionRow {
    switch event {
    case .queue: .taskQueue
    case .cancel: self == .new ? .taskCancelNew : .taskCancelWaiting
    case .reach: .taskReach
    case .finish: .taskFinish
    case .offer: .taskOffer
    case .claim: .taskClaim
    case .expire: .taskExpire
    case .rearm: .taskRearm
    }
  }

  @inlinable func after(_ event: Event) -> TaskWaiterState? {
    switch (self, event) {
    case (.new, .queue): .waiting
    case (.new, .cancel), (.waiting, .cancel): .cancelled
    case (.waiting, .reach): .granted
    case (.waiting, .offer), (.expired, .offer): .offered
    case (.offered, .claim): .claimed
    case (.offered, .expire): .expired
    case (.expired, .rearm): .waiting
    case (.granted, .finish): .done
    default: nil
    }
  }
}
