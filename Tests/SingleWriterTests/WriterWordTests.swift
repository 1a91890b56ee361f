import Testing

@testable import SingleWriter

/// Every reachable state word × every event the protocol allows in it: the transition
/// keeps the invariants, and agrees with a model of the protocol written here a second
/// time, over named fields instead of bits.
@Suite struct WriterWordTests {
  /// The protocol's state, spelled out.
  struct Model: Hashable, CustomStringConvertible {
    var writer = false
    var queued = false
    var writing = false
    var waiters = false
    var observed = false
    var dirty = false
    var parked = false
    var readers: UInt32 = 0

    init() {}

    init(_ word: WriterWord) {
      writer = word.isCheckedOut
      queued = word.isQueued
      writing = word.isWriting
      waiters = word.hasWaiters
      observed = word.isObserved
      dirty = word.isDirty
      parked = word.hasParked
      readers = word.readers
    }

    var description: String { "\(WriterWord(self))" }

    /// The invariants, as the docs state them.
    var isLegal: Bool {
      (!queued || writer) && (!parked || writer) && (!writing || writer)
        && (!writing || readers == 0) && (!waiters || writing || readers > 0)
        && (!dirty || observed)
    }
  }

  /// What an event did: the new state and its action, or not applicable (`nil`).
  typealias Outcome = (state: Model, action: String)?

  /// One event, as the word applies it and as the model says it should.
  struct Event: Sendable {
    let name: String
    /// Whether the protocol lets this event happen in a state (its preconditions).
    let allowed: @Sendable (Model) -> Bool
    let word: @Sendable (WriterWord) -> (WriterWord, String)?
    let model: @Sendable (Model) -> (Model, String)?
  }

  static let events: [Event] = [
    Event(
      name: "checkout", allowed: { _ in true },
      word: { $0.checkout().map { ($0, "") } },
      model: { m in
        guard !m.writer else { return nil }
        var n = m
        n.writer = true
        return (n, "")
      }),
    Event(
      name: "beginClosureWrite", allowed: { _ in true },
      word: { $0.beginClosureWrite().map { ($0, "") } },
      model: { m in
        guard !m.writer, !m.writing, m.readers == 0 else { return nil }
        var n = m
        n.writer = true
        n.writing = true
        n.dirty = m.dirty || m.observed
        return (n, "")
      }),
    Event(
      name: "beginAccess", allowed: { _ in true },
      word: { w in
        let (n, action) = w.beginAccess()
        return (n, "\(action)")
      },
      model: { m in
        if !m.writer { return (m, "stale") }
        if m.writing || m.readers != 0 { return (m, "wait") }
        var n = m
        n.writing = true
        n.dirty = m.dirty || m.observed
        return (n, "begun")
      }),
    Event(
      name: "endAccess", allowed: { $0.writing },
      word: { w in
        let (n, wake) = w.endAccess()
        return (n, "wake: \(wake)")
      },
      model: { m in
        var n = m
        n.writing = false
        n.waiters = false
        return (n, "wake: \(m.waiters)")
      }),
    Event(
      name: "beginRead", allowed: { $0.readers < 3 },
      word: { $0.beginRead().map { ($0, "") } },
      model: { m in
        guard !m.writing else { return nil }
        var n = m
        n.readers += 1
        return (n, "")
      }),
    Event(
      name: "endRead", allowed: { $0.readers > 0 },
      word: { w in
        let (n, wake) = w.endRead()
        return (n, "wake: \(wake)")
      },
      model: { m in
        var n = m
        n.readers -= 1
        let wake = n.readers == 0 && m.waiters
        if wake { n.waiters = false }
        return (n, "wake: \(wake)")
      }),
    Event(
      name: "markWaiters", allowed: { _ in true },
      word: { $0.markWaiters().map { ($0, "") } },
      model: { m in
        guard m.writing || m.readers > 0 else { return nil }
        var n = m
        n.waiters = true
        return (n, "")
      }),
    Event(
      name: "endCheckout", allowed: { $0.writer },
      word: { $0.endCheckout().map { ($0, "") } },
      model: { m in
        guard !m.queued, !m.observed, !m.parked, !m.writing else { return nil }
        var n = m
        n.writer = false
        return (n, "")
      }),
    Event(
      name: "endClosureWrite", allowed: { $0.writer && $0.writing },
      word: { w in w.endClosureWrite().map { ($0.0, "publish: \($0.1)") } },
      model: { m in
        // Nothing set but the write and, maybe, observation: an observed write ends here
        // too, keeping `observed` and publishing if dirty.
        guard !m.queued, !m.waiters, !m.parked, m.readers == 0 else { return nil }
        var n = Model()
        n.observed = m.observed
        return (n, "publish: \(m.dirty)")
      }),
    Event(
      name: "endObservedClosureWrite", allowed: { $0.writer && $0.writing },
      word: { w in w.endObserved(closureWrite: true).map { ($0.0, "publish: \($0.1)") } },
      model: { m in
        guard !m.queued, !m.waiters, !m.parked, m.readers == 0 else { return nil }
        var n = Model()
        n.observed = m.observed
        return (n, "publish: \(m.dirty)")
      }),
    Event(
      name: "endObservedCheckout", allowed: { $0.writer && !$0.writing },
      word: { w in w.endObserved(closureWrite: false).map { ($0.0, "publish: \($0.1)") } },
      model: { m in
        // A proxy's or a `writeNext` body's end, its accesses over: nothing set but the
        // checkout and, maybe, observation; readers may be reading.
        guard !m.queued, !m.waiters, !m.parked else { return nil }
        var n = Model()
        n.observed = m.observed
        n.readers = m.readers
        return (n, "publish: \(m.dirty)")
      }),
    Event(
      name: "enqueue", allowed: { !$0.queued },
      word: { w in
        let (n, tookOver) = w.enqueue()
        return (n, "took over: \(tookOver)")
      },
      model: { m in
        var n = m
        n.writer = true
        n.queued = true
        return (n, "took over: \(!m.writer)")
      }),
    Event(
      name: "release", allowed: { $0.writer && !$0.writing },
      word: { w in
        let (n, action) = w.release()
        return (n, "wake: \(action.wake), publish: \(action.publish)")
      },
      model: { m in
        var n = m
        n.writer = false
        n.queued = false
        n.parked = false
        n.dirty = false
        return (n, "wake: \(m.parked), publish: \(m.dirty)")
      }),
    Event(
      name: "park", allowed: { _ in true },
      word: { $0.park().map { ($0, "") } },
      model: { m in
        guard m.writer else { return nil }
        var n = m
        n.parked = true
        return (n, "")
      }),
    Event(
      name: "checkoutAfterParking", allowed: { _ in true },
      word: { $0.checkoutAfterParking().map { ($0, "") } },
      model: { m in
        guard !m.writer else { return nil }
        var n = m
        n.writer = true
        n.parked = true
        return (n, "")
      }),
    Event(
      name: "observe", allowed: { _ in true },
      word: { ($0.observe(), "") },
      model: { m in
        var n = m
        n.observed = true  // a held checkout's accesses marked `proxy_wrote` already
        return (n, "")
      }),
    Event(
      name: "unobserve", allowed: { _ in true },
      word: { ($0.unobserve(), "") },
      model: { m in
        var n = m
        n.observed = false
        n.dirty = false
        return (n, "")
      }),
    Event(
      name: "takeDirty", allowed: { _ in true },
      word: { $0.takeDirty().map { ($0, "") } },
      model: { m in
        guard m.dirty else { return nil }
        var n = m
        n.dirty = false
        return (n, "")
      }),
  ]

  /// Every word reachable from a new container's, with up to three readers.
  static func reachable() -> (states: Set<Model>, transitions: Int, mismatches: [String]) {
    var seen: Set<Model> = [Model()]
    var frontier = [Model()]
    var transitions = 0
    var mismatches: [String] = []
    while let state = frontier.popLast() {
      for event in events where event.allowed(state) {
        transitions += 1
        let actual = event.word(WriterWord(state)).map { (Model($0.0), $0.1) }
        let expected = event.model(state)
        switch (actual, expected) {
        case (nil, nil): continue
        case (let a?, let e?) where a.0 == e.0 && a.1 == e.1:
          if seen.insert(a.0).inserted { frontier.append(a.0) }
        default:
          mismatches.append(
            "\(event.name) from \(state): word gave \(String(describing: actual)), "
              + "model \(String(describing: expected))")
        }
      }
    }
    return (seen, transitions, mismatches)
  }

  @Test func everyTransitionFromEveryReachableWordMatchesTheModel() {
    let (states, transitions, mismatches) = Self.reachable()
    #expect(mismatches.isEmpty, "\(mismatches.count) mismatches: \(mismatches.prefix(3))")
    // Seven flags and a reader count have 512 combinations; the invariants leave fewer.
    #expect(states.count > 40)
    #expect(transitions > states.count * 10)
  }

  @Test func everyReachableWordKeepsTheInvariants() {
    for state in Self.reachable().states {
      #expect(state.isLegal, "\(state)")
      #expect(WriterWord(state).invariantViolation == nil, "\(state)")
    }
  }

  @Test func theInvariantCheckRejectsEveryIllegalWord() {
    // All flag combinations with zero to two readers: the word's check and the model's
    // statement of the invariants agree on each.
    for raw in UInt32(0)..<(3 << WriterWord.readerShift) {
      let model = Model(WriterWord(raw: raw))
      #expect(
        (WriterWord(raw: raw).invariantViolation == nil) == model.isLegal, "\(model)")
    }
  }

  @Test func noNewcomerTakesTheCheckoutWhileWritesAreQueued() {
    for state in Self.reachable().states where state.queued {
      let word = WriterWord(state)
      #expect(word.checkout() == nil, "\(state)")
      #expect(word.beginClosureWrite() == nil, "\(state)")
      #expect(word.checkoutAfterParking() == nil, "\(state)")
      #expect(word.endCheckout() == nil, "the fast end skips the queue: \(state)")
      #expect(word.endClosureWrite() == nil, "the fast end skips the queue: \(state)")
    }
  }

  @Test func anObservedWriteEndingAfterTheLastSubscriberLeftStaysUnobserved() {
    // The write began observed; the subscriber left meanwhile, clearing both bits.
    let during = WriterWord(raw: WriterWord.writer | WriterWord.writing)
    let ended = during.endObserved(closureWrite: true)
    #expect(ended?.0 == WriterWord(raw: 0))
    #expect(ended?.1 == false)
  }

  @Test func anObservedCheckoutEndsAtOnceOnlyWithNothingElseToDo() {
    for state in Self.reachable().states where state.writer && !state.writing {
      let ended = WriterWord(state).endObserved(closureWrite: false)
      let alone = !state.queued && !state.parked && !state.waiters
      #expect((ended != nil) == alone, "\(state)")
      if let (word, publish) = ended {
        #expect(!word.isCheckedOut && !word.isDirty, "\(state)")
        #expect(word.isObserved == state.observed && publish == state.dirty, "\(state)")
      }
    }
  }
}

extension WriterWord {
  init(_ model: WriterWordTests.Model) {
    var raw = model.readers << WriterWord.readerShift
    if model.writer { raw |= WriterWord.writer }
    if model.queued { raw |= WriterWord.queued }
    if model.writing { raw |= WriterWord.writing }
    if model.waiters { raw |= WriterWord.waiters }
    if model.observed { raw |= WriterWord.observed }
    if model.dirty { raw |= WriterWord.dirty }
    if model.parked { raw |= WriterWord.parked }
    self.init(raw: raw)
  }
}
