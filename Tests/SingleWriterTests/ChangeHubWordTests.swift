import Testing

@testable import SingleWriter

/// Every reachable hub word × every event: the transition keeps the invariants, and
/// agrees with a model of the protocol written here a second time, over named fields
/// instead of bits.
@Suite struct ChangeHubWordTests {
  /// Versions count modulo 2^59, the width the word leaves them: never reached, but the
  /// arithmetic is checked across it all the same.
  static let versions: UInt64 = 1 << 59

  /// The hub's state, spelled out.
  struct Model: Hashable, CustomStringConvertible {
    var version: UInt64 = 0
    var waiting = false
    var tracked = false
    var closed = false
    var snapshotWanted = false
    var pending = false

    init(version: UInt64 = 0) { self.version = version }

    init(_ word: ChangeHubWord) {
      version = word.version
      waiting = word.isWaiting
      tracked = word.isTracked
      closed = word.isClosed
      snapshotWanted = word.wantsSnapshot
      pending = word.isPending
    }

    var description: String { "\(ChangeHubWord(self))" }

    /// The invariants, as the docs state them.
    var isLegal: Bool { !closed || (!waiting && !snapshotWanted && !pending) }

    var nextVersion: UInt64 { (version + 1) % ChangeHubWordTests.versions }
  }

  /// One event, as the word applies it and as the model says it should. A blind event
  /// also has the `Change` its driver applies with one read-modify-write.
  struct Event: Sendable {
    let name: String
    let blind: ChangeHubWord.Change?
    let word: @Sendable (ChangeHubWord) -> (ChangeHubWord, String)?
    let model: @Sendable (Model) -> (Model, String)?

    init(
      _ name: String, blind: ChangeHubWord.Change? = nil,
      word: @escaping @Sendable (ChangeHubWord) -> (ChangeHubWord, String)?,
      model: @escaping @Sendable (Model) -> (Model, String)?
    ) {
      self.name = name
      self.blind = blind
      self.word = word
      self.model = model
    }

    /// Whether this event may happen in `state` during the exploration: the events that
    /// move the version stop a few versions past each start, so the set of states stays
    /// finite.
    func allowed(_ state: Model) -> Bool {
      !ChangeHubWordTests.movesTheVersion.contains(name)
        || ChangeHubWordTests.publishing.contains(state.version)
    }
  }

  /// The versions the events that may move the version start from: past a new hub's 0,
  /// and across the wrap.
  static let publishing: Set<UInt64> = [0, 1, versions - 2, versions - 1]
  static let movesTheVersion: Set<String> = ["collect", "keepSnapshot", "close"]

  static let events: [Event] = [
    Event(
      "publish", blind: ChangeHubWord.publication,
      word: { w in
        w.publish().map {
          (
            $0,
            "notify: \(w.isTracked), wake: \(w.isWaiting), slow: \(w.publicationIsSlow), "
              + "skipped: \(w.absorbsPublication)"
          )
        }
      },
      model: { m in
        guard !m.closed else { return nil }
        var n = m
        n.pending = true
        let slow = m.tracked || m.waiting
        // Nothing to change and nobody to tell: the driver only loads the word.
        let skipped = m.pending && !slow
        return (n, "notify: \(m.tracked), wake: \(m.waiting), slow: \(slow), skipped: \(skipped)")
      }),
    Event(
      "collect",
      word: { $0.collect().map { ($0, "") } },
      model: { m in
        guard m.pending else { return nil }
        var n = m
        n.pending = false
        n.version = m.nextVersion
        return (n, "")
      }),
    Event(
      "sleep, up to date",
      word: { w in w.sleep(after: w.version).map { ($0, "") } },
      model: { m in
        guard !m.closed, !m.pending else { return nil }
        var n = m
        n.waiting = true
        return (n, "")
      }),
    Event(
      "sleep, behind",
      word: { w in w.sleep(after: w.version &- 1).map { ($0, "") } },
      model: { _ in nil }),
    Event(
      "wake", blind: ChangeHubWord.wakeUp,
      word: { $0.wake().map { ($0, "") } },
      model: { m in
        var n = m
        n.waiting = false
        return (n, "")
      }),
    Event(
      "wantSnapshot",
      word: { $0.wantSnapshot().map { ($0, "") } },
      model: { m in
        guard !m.closed, !m.snapshotWanted else { return nil }
        var n = m
        n.snapshotWanted = true
        return (n, "")
      }),
    Event(
      "keepSnapshot",
      word: { w in
        w.keepSnapshot().map {
          ($0, "version: \($0.version), notify: \(w.isTracked), wake: \(w.isWaiting)")
        }
      },
      model: { m in
        guard !m.closed else { return nil }
        var n = m
        n.snapshotWanted = false
        n.pending = false
        n.version = m.nextVersion
        return (n, "version: \(m.nextVersion), notify: \(m.tracked), wake: \(m.waiting)")
      }),
    Event(
      "track", blind: ChangeHubWord.tracking,
      word: { $0.track().map { ($0, "") } },
      model: { m in
        guard !m.tracked, !m.closed else { return nil }
        var n = m
        n.tracked = true
        return (n, "")
      }),
    Event(
      "close",
      word: { $0.close().map { ($0, "") } },
      model: { m in
        guard !m.closed else { return nil }
        var n = m
        n.closed = true
        n.waiting = false
        n.snapshotWanted = false
        if m.pending { n.version = m.nextVersion }
        n.pending = false
        return (n, "")
      }),
  ]

  /// Every word reachable from a new hub's, and from one 2^60 − 2 publications later.
  static func reachable() -> (
    states: Set<Model>, transitions: Int, mismatches: [String]
  ) {
    let starts = [Model(), Model(version: versions - 2)]
    var seen = Set(starts)
    var frontier = starts
    var transitions = 0
    var mismatches: [String] = []
    while let state = frontier.popLast() {
      for event in events where event.allowed(state) {
        transitions += 1
        let actual = event.word(ChangeHubWord(state)).map { (Model($0.0), $0.1) }
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
    // Eighteen flag combinations are legal, at each of the five versions explored.
    #expect(states.count == 90)
    // Every event in every state, but none that may move the version from the last
    // version explored.
    #expect(transitions == states.count * Self.events.count - 18 * Self.movesTheVersion.count)
  }

  @Test func everyReachableWordKeepsTheInvariants() {
    for state in Self.reachable().states {
      #expect(state.isLegal, "\(state)")
      #expect(ChangeHubWord(state).invariantViolation == nil, "\(state)")
    }
  }

  @Test func theInvariantCheckRejectsEveryIllegalWord() {
    // Every flag combination at versions 0, 1 and the last before the wrap: the word's
    // check and the model's statement of the invariants agree on each.
    for version: UInt64 in [0, 1, Self.versions - 1] {
      for flags in UInt64(0)..<ChangeHubWord.versionStep {
        let word = ChangeHubWord(raw: version << ChangeHubWord.versionShift | flags)
        #expect((word.invariantViolation == nil) == Model(word).isLegal, "\(word)")
      }
    }
  }

  @Test func aBlindEventsChangeIsItsTransition() {
    // The driver applies these with one read-modify-write: in every word the event
    // allows, that must make the word the transition makes.
    for state in Self.reachable().states {
      let word = ChangeHubWord(state)
      for event in Self.events {
        guard let change = event.blind, let next = event.word(word) else { continue }
        #expect(word.applying(change) == next.0, "\(event.name) from \(state)")
      }
    }
  }

  @Test func onlyACollectionMovesTheVersionAndNothingEndsTracking() {
    // A kept snapshot is a publication collected at once; the close collects too.
    for state in Self.reachable().states {
      for event in Self.events {
        guard let (next, _) = event.word(ChangeHubWord(state)) else { continue }
        if !Self.movesTheVersion.contains(event.name) {
          #expect(next.version == state.version, "\(event.name) from \(state)")
        }
        #expect(!state.tracked || next.isTracked, "\(event.name) from \(state)")
        #expect(!state.closed || next.isClosed, "\(event.name) from \(state)")
      }
    }
  }

  @Test func theVersionWrapsAfterTwoToTheFiftyNinthCollections() {
    var word = ChangeHubWord(Model(version: Self.versions - 1))
    word.raw |= ChangeHubWord.tracked | ChangeHubWord.pending
    let next = word.collect()
    #expect(next?.version == 0)
    #expect(next?.isTracked == true, "the carry stays out of the flags")
    #expect(next?.isPending == false)
  }
}

extension ChangeHubWord {
  init(_ model: ChangeHubWordTests.Model) {
    var raw = model.version << ChangeHubWord.versionShift
    if model.waiting { raw |= ChangeHubWord.waiting }
    if model.tracked { raw |= ChangeHubWord.tracked }
    if model.closed { raw |= ChangeHubWord.closed }
    if model.snapshotWanted { raw |= ChangeHubWord.snapshotWanted }
    if model.pending { raw |= ChangeHubWord.pending }
    self.init(raw: raw)
  }
}
