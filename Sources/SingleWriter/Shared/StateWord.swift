import SingleWriterAtomics

/// A small state machine kept in one atomic word: its states are the word's values, and
/// `after(_:)` is its transition table, the only code that says which event moves which
/// state where. ``UnsafeMutablePointer/apply(_:)`` is its one compare-and-exchange driver.
@usableFromInline
protocol StateWord: RawRepresentable, Equatable, Sendable where RawValue == UInt32 {
  associatedtype Event
  /// The state `event` moves this one to, or `nil` if `event` cannot happen here.
  func after(_ event: Event) -> Self?
  /// The row of the article's table that `event` takes from this state, for the
  /// scheduler's row coverage.
  func row(_ event: Event) -> TransitionRow
}

extension UnsafeMutablePointer where Pointee == sw_atomic_u32 {
  /// The state the word holds now, with acquire ordering.
  @inlinable func state<State: StateWord>(as _: State.Type = State.self) -> State {
    let raw = sw_load_acquire(self)
    guard let state = State(rawValue: raw) else { preconditionFailure("\(State.self) \(raw)") }
    return state
  }

  /// Applies `event` with a compare-and-exchange (acquire and release) until it sticks,
  /// or until the state found cannot take it. Returns the state it left, or `nil`.
  @inlinable @discardableResult
  func apply<State: StateWord>(_ event: State.Event, as _: State.Type) -> State? {
    var old: State = state()
    while let new = old.after(event) {
      var expected = old.rawValue
      if sw_cas(self, &expected, new.rawValue) {
        old.row(event).reached()
        return old
      }
      guard let found = State(rawValue: expected) else {
        preconditionFailure("\(State.self) \(expected)")
      }
      old = found
    }
    return nil
  }
}
