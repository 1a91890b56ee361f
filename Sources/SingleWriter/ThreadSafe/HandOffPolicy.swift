/// Every timing and size the thread-safe hand-off tunes, in one place, as the standard
/// library keeps its spin counts. Each is a computed constant, so inlined code folds it.
///
/// The protocol is correct with any positive value; these decide only who waits, how,
/// and for how long. The C wait layer owns one number of its own: `sw_wait` spins 100
/// pauses before it sleeps (wait.c), for a critical section of a few instructions.
@usableFromInline
enum HandOffPolicy {
  // MARK: Times, in nanoseconds

  /// How long a thread serves other threads' queued writes before the next thread to
  /// queue one takes over: the latency a `writeNext` caller may pay for others.
  @inlinable static var servingSlice: UInt64 { 1_000_000 }

  /// How long a chosen successor waits for the server's batch to end before it
  /// withdraws: a batch still running then may be waiting for the successor itself.
  @inlinable static var successorPatience: UInt64 { 1_000_000 }

  /// How long a `checkout()` offered the writer may leave it unclaimed, its task not yet
  /// running, before a thread blocked in `withWriter` takes it back and writes in its
  /// place (the task keeps its place at the front): what a task that needs a thread may
  /// cost threads that wait.
  @inlinable static var claimWindow: UInt64 { 1_000_000 }

  /// How long a `withWriter` spins and sleeps, overtaken by running threads, before it
  /// queues for a direct hand-off: its bound on being overtaken.
  @inlinable static var overtakingBound: UInt64 { 1_000_000 }

  /// How often a queued `withWriter` looks again at whose gate to sleep on: servers
  /// change while it waits.
  @inlinable static var gateRecheck: UInt64 { 1_000_000 }

  /// How often a `writeNext` waiting for room in a bounded backlog looks again on its
  /// own: a write started just as it asked may not have woken it.
  @inlinable static var roomRecheck: UInt64 { 100_000 }

  /// How long the first sleep for an access through a proxy lasts at most: the access's
  /// end may miss a sleeper that registered at that moment (WriterLock+ProxyAccess.swift),
  /// and by then its store shows.
  @inlinable static var accessRecheck: UInt64 { 1_000_000 }

  /// How long a wait that may be for the caller's own proxy lasts before it warns: far
  /// past any real checkout, short enough to be seen while debugging.
  @inlinable static var deadlockWarning: UInt64 { 1_000_000_000 }

  // MARK: Spins

  /// A blocked `withWriter` (or an async write before it queues) spins from `minSpinRounds`
  /// to `maxSpinRounds` rounds, looking after 1, 2, 4, ... pauses: 3 pauses at least, 127
  /// (a few microseconds) at most, shorter than a sleep and its wake-up.
  @inlinable static var minSpinRounds: UInt32 { 2 }
  @inlinable static var maxSpinRounds: UInt32 { 7 }

  /// Rounds of 1, 2, 4, ... pauses before the hand-off's lock sleeps: it is held for an
  /// append or a batch decision.
  @inlinable static var handOffLockSpinRounds: Int { 6 }

  /// Pauses an access spins while a lend is resolved (a few instructions) before it
  /// sleeps: never without bound, or it could starve a preempted lender.
  @inlinable static var lendSpins: Int { 64 }

  // MARK: Sizes

  /// How many closure writes take the priority gate after a thread last slept for the
  /// writer: taking it costs as much again as the write, so only while waiters sleep.
  @inlinable static var gateSpan: UInt32 { 1_024 }

  /// Past this many queued writes while another thread serves, an enqueuer gives up its
  /// time slice, so that writers outpacing the server leave it the CPU.
  @inlinable static var yieldingBacklog: Int { 4_096 }

  /// The largest batch a server takes once it serves other threads past its slice, so
  /// that a successor is not kept waiting behind a backlog taken at once.
  @inlinable static var lateBatch: Int { 8 }

  /// How many entries a server runs between two clock reads: the clock costs more than a
  /// small write.
  @inlinable static var entriesPerClockRead: Int { 64 }
}
