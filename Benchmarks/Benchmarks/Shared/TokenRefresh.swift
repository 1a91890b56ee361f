// What both token-refresh benchmarks (Tools/Transactions and Tools/Scaling) share: the
// session they refresh and the counts that prove the single flight.

import Synchronization

/// What the uses share: the token, when it expires, and how often it was used.
public struct Session: Sendable {
  public var token = 0
  public var expiresAt: UInt64 = 0
  public var uses = 0

  public init() {}
}

/// Counts that prove the single flight: refreshes in flight now and at most, and writes
/// that ran while one was in flight (with the old token).
public final class FlightLog: Sendable {
  public let inFlight = Atomic(0)
  public let maxInFlight = Atomic(0)
  public let refreshes = Atomic(0)
  public let staleWrites = Atomic(0)
  /// Writes that began while a refresh was in flight: they had to wait for it (counted by
  /// Tools/Transactions only).
  public let waitedForRefresh = Atomic(0)

  public init() {}

  public func beginRefresh() {
    let now = inFlight.add(1, ordering: .acquiringAndReleasing).newValue
    _ = maxInFlight.max(now, ordering: .relaxed)
    refreshes.add(1, ordering: .relaxed)
  }
  public func endRefresh() { inFlight.subtract(1, ordering: .acquiringAndReleasing) }
  public var refreshing: Bool { inFlight.load(ordering: .acquiring) > 0 }

  /// One use of the token in a write: counts it, and counts it as stale if a fetch is in
  /// flight (the new token is on its way, so this one has expired). Inlined into the
  /// timed uses of the tools that call it.
  @inlinable @inline(__always)
  public func countUse(in session: inout Session) {
    if refreshing { staleWrites.add(1, ordering: .relaxed) }
    session.uses += 1
  }
}

/// The simulated call to the token server.
public func fetchToken(after previous: Int, microseconds: Int) async -> Int {
  try? await Task.sleep(nanoseconds: UInt64(microseconds) * 1_000)
  return previous + 1
}
