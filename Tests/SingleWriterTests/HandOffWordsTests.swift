import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// The small state machines beside the state word (the lend word, a thread's waiter, a
/// task's waiter): every reachable state × every event, as the typed word applies it
/// against a model written here a second time, as a table of named states; and the
/// drivers, applied to real atomics, agree with the transitions.
@Suite struct HandOffWordsTests {
  // MARK: The lend word

  /// The lend protocol, spelled out: a generation, and whether its end is being resolved
  /// with or without sleeping accesses.
  struct LendModel: Hashable {
    var generation: UInt32
    var resolving = false
    var sleepers = false

    init(generation: UInt32, resolving: Bool = false, sleepers: Bool = false) {
      self.generation = generation
      self.resolving = resolving
      self.sleepers = sleepers
    }

    init(_ word: LendWord) {
      self.init(
        generation: word.generation, resolving: word.isResolving, sleepers: word.hasSleepers)
    }

    var isLegal: Bool { !sleepers || resolving }
  }

  enum LendEvent: CaseIterable { case open, resolve, markSleepers, endKept, endRetired }

  /// `open` has its precondition checked here, as the lender's protocol guarantees it.
  static func apply(_ event: LendEvent, to word: LendWord) -> (LendWord, wake: Bool)? {
    switch event {
    case .open: word.isResolving ? nil : (word.opened(), false)
    case .resolve: word.resolved().map { ($0, false) }
    case .markSleepers: word.withSleepers().map { ($0, false) }
    case .endKept: word.ended(kept: true)
    case .endRetired: word.ended(kept: false)
    }
  }

  static func apply(_ event: LendEvent, to m: LendModel) -> (LendModel, wake: Bool)? {
    switch (event, m.resolving) {
    case (.open, false): (LendModel(generation: m.generation + 1), false)
    case (.resolve, false): (LendModel(generation: m.generation, resolving: true), false)
    case (.markSleepers, true):
      (LendModel(generation: m.generation, resolving: true, sleepers: true), false)
    case (.endKept, true): (LendModel(generation: m.generation), m.sleepers)
    case (.endRetired, true): (LendModel(generation: m.generation + 1), m.sleepers)
    default: nil
    }
  }

  @Test func everyLendTransitionFromEveryReachableWordMatchesTheModel() {
    var seen: Set<UInt32> = []
    var frontier = [LendWord(raw: 0)]
    var transitions = 0
    while let word = frontier.popLast() {
      guard word.generation < 4, seen.insert(word.raw).inserted else { continue }
      #expect(word.invariantViolation == nil, "\(word)")
      #expect(LendModel(word).isLegal, "\(word)")
      for event in LendEvent.allCases {
        let typed = Self.apply(event, to: word)
        let modelled = Self.apply(event, to: LendModel(word))
        #expect(typed.map { LendModel($0.0) } == modelled.map(\.0), "\(word) \(event)")
        #expect(typed?.wake == modelled?.wake, "\(word) \(event)")
        if let (next, _) = typed {
          transitions += 1
          frontier.append(next)
        }
      }
    }
    // Four generations, each current, resolving, or resolving with sleepers.
    #expect(seen.count == 12)
    #expect(transitions > 30)
  }

  @Test func anAccessGoesOnlyThroughItsOwnCurrentLend() {
    for raw in UInt32(0)..<(6 << 2) {
      let word = LendWord(raw: raw)
      guard word.invariantViolation == nil else {
        #expect(word.hasSleepers && !word.isResolving)
        continue
      }
      for lent in UInt32(1)..<6 {
        let expected: LendWord.Access =
          word.generation != lent ? .stale : word.isResolving ? .wait : .go
        #expect(word.admits(lent) == expected, "\(word) lent \(lent)")
      }
    }
  }

  // MARK: The waiters

  /// A table of the waiters' transitions, written as the article gives it.
  static let taskTable: [TaskWaiterState: [TaskWaiterState.Event: TaskWaiterState]] = [
    .new: [.queue: .waiting, .cancel: .cancelled],
    .waiting: [.cancel: .cancelled, .reach: .granted, .offer: .offered],
    .granted: [.finish: .done],
    .offered: [.claim: .claimed, .expire: .expired],
    .expired: [.offer: .offered, .rearm: .waiting],
  ]

  static let waiterTable: [WaiterState: [WaiterState.Event: WaiterState]] = [
    .waiting: [.grant: .handedTheCheckout, .dismiss: .dismissed, .withdraw: .withdrawn]
  ]

  @Test func everyTaskWaiterTransitionMatchesTheTable() {
    for state in TaskWaiterState.allCases {
      for event in TaskWaiterState.Event.allCases {
        #expect(state.after(event) == Self.taskTable[state]?[event], "\(state) \(event)")
      }
    }
  }

  @Test func everyWaiterTransitionMatchesTheTable() {
    for state in WaiterState.allCases {
      for event in WaiterState.Event.allCases {
        #expect(state.after(event) == Self.waiterTable[state]?[event], "\(state) \(event)")
      }
    }
  }

  /// Each task waiter's end is reached from `new` only along the table, and every state
  /// is reachable: no state is dead code.
  @Test func everyTaskWaiterStateIsReachable() {
    var reached: Set<TaskWaiterState> = [.new]
    var frontier: [TaskWaiterState] = [.new]
    while let state = frontier.popLast() {
      for event in TaskWaiterState.Event.allCases {
        if let next = state.after(event), reached.insert(next).inserted { frontier.append(next) }
      }
    }
    #expect(reached == Set(TaskWaiterState.allCases))
  }

  /// The driver on a real atomic word: an event applies only in the states that take it,
  /// returns the state it left, and leaves the word alone otherwise.
  @Test func theDriverAppliesExactlyTheTable() {
    let word = UnsafeMutablePointer<sw_atomic_u32>.allocate(capacity: 1)
    defer { word.deallocate() }
    for state in TaskWaiterState.allCases {
      for event in TaskWaiterState.Event.allCases {
        sw_store_release(word, state.rawValue)
        let left = word.apply(event, as: TaskWaiterState.self)
        let expected = state.after(event)
        #expect(left == (expected == nil ? nil : state), "\(state) \(event)")
        #expect(word.state(as: TaskWaiterState.self) == expected ?? state, "\(state) \(event)")
      }
    }
  }

  /// A thread's waiter is decided once: whichever of the server and the waiter moves
  /// first wins, and the other's move fails.
  @Test func aWaiterIsDecidedOnce() {
    for first in WaiterState.Event.allCases {
      for second in WaiterState.Event.allCases {
        let waiter = Waiter()
        #expect(waiter.flag.apply(first, as: WaiterState.self) == .waiting)
        #expect(waiter.flag.apply(second, as: WaiterState.self) == nil)
        #expect(waiter.current == WaiterState.waiting.after(first))
      }
    }
  }
}
