/// Where a thread blocked in `withWriter`, or a chosen successor, stands, typed: the
/// serving thread and the waiter itself race to move it out of `waiting`, once.
/// "How the hand-off works" gives the table.
@usableFromInline
enum WaiterState: UInt32, StateWord, CaseIterable {
  /// Blocked, nothing decided.
  case waiting
  /// The checkout is the waiter's now.
  case handedTheCheckout
  /// Not coming: whoever ends the checkout serves (a successor the server dismissed).
  case dismissed
  /// A successor stopped waiting: the server, which has not returned, serves on.
  case withdrawn

  @usableFromInline
  enum Event: CaseIterable, Sendable {
    /// The server hands the checkout over.
    case grant
    /// The server says the checkout is not coming.
    case dismiss
    /// A successor's patience ran out.
    case withdraw
  }

  @inlinable func row(_ event: Event) -> TransitionRow {
    switch event {
    case .grant: .waiterGrant
    case .dismiss: .waiterDismiss
    case .withdraw: .waiterWithdraw
    }
  }

  @inlinable func after(_ event: Event) -> WaiterState? {
    guard self == .waiting else { return nil }
    switch event {
    case .grant: return .handedTheCheckout
    case .dismiss: return .dismissed
    case .withdraw: return .withdrawn
    }
  }
}
