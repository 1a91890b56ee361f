import SingleWriterAtomics

/// One row of the transition tables in "How the hand-off works", or one of the events its
/// sections on lends and the priority gate describe: what the deterministic scheduler's
/// scenarios must reach, and count, so that a row no scenario reaches shows.
///
/// Named after its table and event (`wordEndRead`, `handOffArriveAsSuccessor`). A row
/// whose action depends on the state has a case per outcome that matters (`wordEndRead`,
/// `wordEndReadWakes`), so that the branch that wakes someone must be reached too; the
/// outcomes that stop the program (a stale proxy) have none.
///
/// Counted in debug builds only, and only while `sw_rows_counting` says so: in a
/// SINGLEWRITER_SCHED build, on the scheduler's threads; otherwise when a test asks.
/// Release builds compile every hook to nothing.
///
/// Adding a row is one case here and one call where its transition is taken:
/// - `row.reached()` where the transition is decided and cannot be undone: under a lock
///   (`HandOff`'s transitions), or after an atomic that always takes effect;
/// - `row.proposed()` in a pure transition that a compare-and-exchange driver may retry
///   or refuse (`WriterWord`'s): the driver calls `TransitionRow.taken()` once its
///   exchange succeeds, which counts the row the transition last proposed on that thread.
///   Every transition a driver can take proposes its row, so none is taken unproposed.
@usableFromInline
enum TransitionRow: UInt32, CaseIterable, Sendable {
  // MARK: Events on the word (WriterWord)

  case wordCheckout
  case wordBeginClosureWrite
  case wordBeginAccess
  /// `beginAccess` found readers or another access: the caller waits.
  case wordBeginAccessWaits
  case wordEndAccess
  case wordEndAccessWakes
  case wordBeginRead
  case wordEndRead
  /// The last reader left with sleepers on the word, and wakes them.
  case wordEndReadWakes
  case wordMarkWaiters
  case wordEndCheckout
  case wordEndClosureWrite
  case wordEndObservedClosureWrite
  /// A checkout whose accesses are over (a proxy's, a `writeNext` body's) ends at once with
  /// observation the only thing set besides `writer`.
  case wordEndObservedCheckout
  case wordEnqueue
  /// `enqueue` found the writer free and took it to serve.
  case wordEnqueueTakesTheWriter
  case wordRelease
  case wordReleaseWakesParked
  case wordPark
  case wordCheckoutAfterParking
  case wordObserve
  case wordUnobserve
  case wordTakeDirty

  // MARK: Accesses through a proxy (WriterLock+ProxyAccess)

  case proxyAccessBegin
  /// The access found readers, a closure write or a commit, and let go of `proxy_access`.
  case proxyAccessStepsBack
  case proxyAccessEnd
  /// The end found sleepers and woke them.
  case proxyAccessEndWakes
  /// A reader found an access through a proxy and kept its slot while it waited.
  case proxyAccessReaderWaits

  // MARK: The hand-off (HandOff)

  /// `arrive` with `queued` clear.
  case handOffArriveSettingQueued
  /// A task's `checkout()` found the writer free as it queued: handed it, entry taken out.
  case handOffArriveCheckoutTakesTheWriter
  case handOffArriveFromTheHolder
  case handOffArriveAsSuccessor
  /// `arrive`, none of the rows above.
  case handOffArriveBehind
  /// The successor's wait ends with the checkout (it serves), or with its withdrawal.
  case handOffSuccessorServes
  case handOffSuccessorWithdraws
  case handOffCheckoutEndedHandedBack
  case handOffCheckoutEndedServe
  case handOffNextBatchHandOver
  case handOffNextBatchRelease
  case handOffNextBatchLate
  /// `nextBatch`, otherwise: the whole inbox moves to `pending`.
  case handOffNextBatchWholeInbox
  /// The successor withdrew before the hand-over: the server serves on.
  case handOffServeOn
  case handOffMidBatchHandOver
  case handOffMidBatchRunOn
  case handOffProxyKeptElsewhere
  case handOffProxyKeptHandedBack
  /// `proxyKept` otherwise, or `stopServing`: no server, no successor.
  case handOffStopServing
  case handOffStopServingDismissesTheSuccessor

  // MARK: The entries the server runs

  case entryWrite
  case entryAsyncWrite
  case entryCheckout
  case entryWaiter
  /// A `withWriter` that took an offer back, and so ran in the task's place: its own
  /// entry is skipped.
  case entryWaiterRanEarly
  case entryCancelledSkipped

  // MARK: Lends

  case lendOpen
  case lendResolve
  case lendEndKept
  case lendEndRetired
  /// The lend's end wakes an access that slept while it was resolved.
  case lendEndWakes
  case lendWaitSleeps

  // MARK: The priority gate

  /// A thread about to sleep for the writer asks the next closure writes to take the gate.
  case gateWant
  case gateClose
  /// The gate was wanted but busy (a woken sleeper passing through): the write goes without.
  case gateCloseBusy
  case gateOpen
  /// The holder that releases the gate at the end of the span clears the flag.
  case gateOpenClearsTheFlag
  case gateSleep

  // MARK: The waiters (WaiterState, TaskWaiterState), counted by their driver

  case waiterGrant
  case waiterDismiss
  case waiterWithdraw
  case taskQueue
  case taskCancelNew
  case taskCancelWaiting
  case taskReach
  case taskFinish
  case taskOffer
  case taskClaim
  case taskExpire
  case taskRearm

  /// Counts this row as reached: for a transition that cannot be undone once decided.
  @inlinable @inline(__always) func reached() {
    #if DEBUG
      sw_rows_reach(rawValue)
    #endif
  }

  /// Counts this row as reached if `condition` holds, which release builds never evaluate:
  /// for a row that is one outcome of code that does not branch on it.
  @inlinable @inline(__always) func reached(if condition: @autoclosure () -> Bool) {
    #if DEBUG
      if condition() { sw_rows_reach(rawValue) }
    #endif
  }

  /// Proposes this row for the transition this thread is computing; the driver's `taken()`
  /// counts it once the compare-and-exchange succeeds.
  @inlinable @inline(__always) func proposed() {
    #if DEBUG
      sw_rows_propose(rawValue)
    #endif
  }

  /// The compare-and-exchange of the transition this thread proposed last succeeded.
  @inlinable @inline(__always) static func taken() {
    #if DEBUG
      sw_rows_take()
    #endif
  }

  /// Whether rows are counted now: never in release builds.
  static var areCounted: Bool {
    #if DEBUG
      return sw_rows_counting() != Int32(SW_ROWS_OFF)
    #else
      return false
    #endif
  }

  /// How many times this row was reached since the last reset.
  var count: UInt64 { sw_rows_count(rawValue) }

  /// The table the row belongs to, from its name.
  var table: String {
    let name = String(describing: self)
    for (prefix, table) in [
      ("word", "Events on the word"), ("handOff", "The hand-off"),
      ("entry", "The hand-off's entries"), ("lend", "Lends"), ("gate", "The priority gate"),
    ] where name.hasPrefix(prefix) {
      return table
    }
    return "?"
  }
}
