import SingleWriterAtomics

/// The wait of a `withWriter` that found the writer busy, in its phases: spin, sleep
/// (on the priority gate of a closure write that holds it, or parked on the word), and,
/// once overtaken for longer than `HandOffPolicy.overtakingBound`, queue for a direct
/// hand-off.
///
/// The spin adapts: one that ends with the writer lengthens the next waiter's by one
/// round, one that ends in a park shortens it, within the policy's bounds; and nobody
/// spins while another waiter sleeps, as in Rust's futex mutex. A short hold is caught
/// while spinning. Under a stream of writes from several threads, where the thread that
/// just wrote takes the writer again at once, waiters sleep instead, so that thread
/// writes on with the cache line its own rather than the line moving on every write.
@usableFromInline
struct ClosureWriteWait {
  /// What one sleep did.
  enum Slept {
    /// Slept on the gate or the word: spin again before the next sleep.
    case slept
    /// The word changed before it could sleep: look at it again.
    case lookAgain
    /// Overtaken past the bound: queue.
    case queue
  }

  let lock: WriterLock
  let me: UInt
  /// The spin budget when the wait began.
  let budget: UInt32
  /// Spin rounds since the wait began or last slept.
  var spins: UInt32 = 0
  /// When it first slept, or 0: from then on it takes the writer keeping `parked`.
  var sleepingSince: UInt64 = 0
  /// A sleep that asked to be woken has ended: later sleeps do not ask again.
  var woken = false

  init(lock: WriterLock, thread me: UInt) {
    self.lock = lock
    self.me = me
    budget = sw_load_relaxed(lock.spinRounds)
  }

  /// Waits until this thread holds the checkout (`true`), or until it has been overtaken
  /// for long enough that it must queue instead (`false`).
  mutating func takeWriter() -> Bool {
    var word = lock.word
    while true {
      if !word.isCheckedOut {
        if takeFreeWriter() { return true }
      } else if spins < budget, !word.hasParked {
        for _ in 0..<(1 << spins) { sw_yield_cpu() }
        spins += 1
      } else {
        switch sleep() {
        case .slept: spins = 0
        case .lookAgain: break
        case .queue: return false
        }
      }
      word = lock.word
    }
  }

  /// Takes the writer, seen free. Having slept, this thread may not be the last sleeper:
  /// it keeps `parked`, so that its end wakes the next one. A spin that pays off
  /// lengthens the next waiter's.
  func takeFreeWriter() -> Bool {
    if sleepingSince != 0 { return lock.update({ $0.checkoutAfterParking() }) != nil }
    guard lock.update({ $0.checkout() }) != nil else { return false }
    if spins != 0, budget < HandOffPolicy.maxSpinRounds {
      sw_store_release(lock.spinRounds, budget + 1)
    }
    return true
  }

  /// One sleep: on the gate of a closure write that holds it, so that the OS lends this
  /// thread's priority to that one, or else parked on the word. The first shortens the
  /// next waiter's spin.
  mutating func sleep() -> Slept {
    let now = sw_monotonic_ns()
    if sleepingSince == 0 {
      sleepingSince = now
      if budget > HandOffPolicy.minSpinRounds { sw_store_release(lock.spinRounds, budget - 1) }
    }
    let waited = now &- sleepingSince
    if waited > HandOffPolicy.overtakingBound { return .queue }
    if lock.sleepOnGate(me) { return .slept }
    // Read the sequence, then the word afresh, so that a release before the sequence
    // read shows in the word (and the writer is taken instead), and one after it changes
    // the sequence and ends the wait at once. With a stale word that already showed
    // `parked`, a release in between cleared the bit, never bumped the sequence again,
    // and left this thread asleep until its timeout.
    //
    // Only the first sleep asks to be woken (sets `parked`). A thread that was woken and
    // still lost the writer to a running thread is in a stream of writes: it sleeps out
    // the rest of its bound unasked for, then queues. Its releases then cost the writing
    // thread no wake-up call each.
    let sequence = sw_load_acquire(lock.parkSequence)
    let word = WriterWord(raw: sw_load_acquire(lock.state))
    if !word.isCheckedOut { return .lookAgain }
    if !woken, !word.hasParked, lock.update({ $0.park() }) == nil { return .lookAgain }
    _ = sw_wait_for(lock.parkSequence, sequence, Int64(HandOffPolicy.overtakingBound &- waited))
    woken = true
    return .slept
  }
}
