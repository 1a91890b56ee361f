import SingleWriterAtomics

/// The clock of a wait that blocks its thread and warns once if it lasts: the waits for
/// the checkout (`Waiter.wait`), for room in a bounded backlog (`waitForRoom`) and for the
/// value (`WriterLock.sleepWhileAccessed`) share it, so each asks its own rule once a
/// second and warns at most once.
///
/// ```swift
/// var wait = LongWait()
/// while stillBlocked() {
///   if wait.isDue(), mayBeStuck() { wait.warn("…") }
///   sleep(atMost: wait.untilDue)
/// }
/// ```
@usableFromInline struct LongWait {
  /// When the wait began, or last asked its rule; 0 before the first `isDue`, so that a
  /// wait that ends at once never reads the clock.
  @usableFromInline var since: UInt64 = 0
  /// Set by `warn`: the wait never asks again.
  @usableFromInline var warned = false

  @usableFromInline init() {}

  /// Whether the caller should ask its rule now: a second has passed since the wait began
  /// or last asked, and it has not warned. The first call starts the clock.
  @usableFromInline mutating func isDue() -> Bool {
    guard !warned else { return false }
    let now = sw_monotonic_ns()
    if since == 0 { since = now }
    guard now &- since >= HandOffPolicy.deadlockWarning else { return false }
    since = now
    return true
  }

  /// How long a sleep may last before the rule is due again; `nil` once the wait has
  /// warned, when it sleeps until woken.
  @usableFromInline var untilDue: UInt64? {
    guard !warned else { return nil }
    let waited = sw_monotonic_ns() &- since
    return waited < HandOffPolicy.deadlockWarning ? HandOffPolicy.deadlockWarning &- waited : 0
  }

  /// Prints `message` on standard error, once for this wait.
  @usableFromInline mutating func warn(_ message: String) {
    warned = true
    sw_print_error(message)
  }
}
