import Foundation
import Testing

/// Generates random programs against `ThreadSafeSingleWriter`'s public API (and a plain
/// `SingleWriter` owned by an actor), runs them in child processes under a watchdog, and
/// checks each ending against `ProgramModel`. See `CheckerSettings` for the environment
/// variables; a failure names the seed that replays it.
@Suite(.serialized) struct ProgramCheckerTests {
  @Test func generatedProgramsEndAsTheModelSays() async {
    let settings = CheckerSettings.current
    let started = Date()
    var pending = settings.seeds[...]
    var counts: [String: Int] = [:]
    var failures: [(seed: UInt64, kind: String, message: String)] = []
    var firstFound: [String: String] = [:]
    var ran = 0
    while !pending.isEmpty {
      let batch = Array(pending.prefix(settings.batch))
      let result = await #expect(
        processExitsWith: .failure, observing: [\.standardErrorContent]
      ) { [batch = batch as [UInt64]] in
        await ChildRunner.run(batch)
      }
      let stderr = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
      var endings = ObservedEnding.parse(stderr, status: result?.exitStatus)
      if endings.isEmpty {
        endings = [
          (
            batch[0],
            .crashed(
              "the child printed no marker: \(result.map { "\($0.exitStatus)" } ?? "no result")"),
            stderr[...]
          )
        ]
      }
      for (seed, ending, text) in endings {
        ran += 1
        pending = pending.drop { $0 <= seed }
        let program = ProgramGenerator.program(seed: seed)
        let allowed = ProgramModel(program).outcomes
        let (kind, failure) = Self.judge(ending, allowed: allowed)
        counts[kind, default: 0] += 1
        guard let failure else { continue }
        let elapsed = Int(Date().timeIntervalSince(started))
        // The first of each kind, and of each kind in each theme, for the summary.
        for key in [failure.kind, "\(failure.kind) in \(program.theme)"]
        where firstFound[key] == nil {
          firstFound[key] = "seed \(seed) after \(ran) programs, \(elapsed) s"
        }
        failures.append((seed, failure.kind, failure.message))
        // Every program of the first five failures of each kind is listed; replay the rest.
        let shown = failures.filter { $0.kind == failure.kind }.count <= 5 || settings.replay
        Issue.record(
          """
          ProgramChecker FAILURE (\(failure.kind)), seed \(seed) (\(program.theme)): \(failure.message)
          model allows: \(allowed); replay: SINGLEWRITER_CHECKER_SEED=\(seed) swift test --filter ProgramChecker
          \(shown ? program.listing : "(listing omitted; replay the seed)")
          child stderr for this program (tail):
          \(shown ? String(text.suffix(1_200)) : "")
          """)
      }
    }
    let elapsed = Date().timeIntervalSince(started)
    let outcomes = counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
    var byKind: [String: Int] = [:]
    for failure in failures { byKind[failure.kind, default: 0] += 1 }
    print(
      "ProgramChecker: \(ran) programs in \(Int(elapsed)) s; outcomes: "
        + outcomes.joined(separator: ", ") + "; failures: \(failures.count)"
        + (byKind.isEmpty
          ? ""
          : " ("
            + byKind.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
              separator: ", ") + ")"))
    for (kind, first) in firstFound.sorted(by: { $0.key < $1.key }) {
      print("ProgramChecker: first \(kind): \(first)")
    }
  }

  /// The observed ending's name, and a failure if the model does not allow it.
  static func judge(
    _ ending: ObservedEnding, allowed: ModelOutcomes
  ) -> (String, (kind: String, message: String)?) {
    // A "pool" warning names no holder: a task's blocking wait outlasted a second behind
    // a checkout held elsewhere, which a loaded machine or another task's documented
    // self-deadlock can make. It is judged by the rest of the ending: a hang with no
    // other warning is a silent hang as far as the holder's warnings go.
    func warningsAllowed(_ kinds: [String]) -> (kind: String, message: String)? {
      for kind in kinds where kind != "pool" {
        let ok =
          (kind == "same thread" && allowed.contains(.warnThread))
          || (kind == "same task" && allowed.contains(.warnTask))
        if !ok {
          return (
            "wrong-holder warning",
            "a \"has waited 1 s\" warning saying \"\(kind)\" holds the checkout, where the model "
              + "allows \(allowed)"
          )
        }
      }
      return nil
    }
    switch ending {
    case .completed(let warnings):
      if let wrong = warningsAllowed(warnings) { return ("completes", wrong) }
      guard allowed.contains(.complete) else {
        return (
          "completes",
          ("unexpected completion", "the program completed, but the model says it \(allowed)")
        )
      }
      return ("completes", nil)
    case .stopped(let message):
      guard allowed.contains(.stop) else {
        return ("stops", ("unexpected stop", "the program stopped: \(message)"))
      }
      return ("stops", nil)
    case .warned(let kinds) where kinds.allSatisfy { $0 == "pool" }:
      return judge(.hung, allowed: allowed)
    case .warned(let kinds):
      guard let wrong = warningsAllowed(kinds) else { return ("warns", nil) }
      // A warning of the other kind names the wrong holder; with none allowed, this is a
      // warning then a hang where the model wants a stop or a completion.
      if !allowed.intersection(.warn).isEmpty { return ("warns", wrong) }
      return (
        "warns",
        (
          "warning then hang",
          "warned (\(kinds.joined(separator: ", "))) and hung, where the model says it \(allowed)"
        )
      )
    case .hung:
      return (
        "hangs",
        (
          "silent hang",
          "the watchdog fired with no expected message (the model says it \(allowed))"
        )
      )
    case .checkFailed(let message):
      let kinds = [
        ("lock-order reports where", "wrong lock-order reports"),
        ("no commit published", "unpublished value seen"),
        ("half-done", "half-done value"), ("before suspending", "await served before suspending"),
        ("above maxQueuedWrites", "backlog above the bound"),
        ("queuedWrites", "wrong queuedWrites"), ("drained()", "drained() too early"),
        ("out of order", "out of order, lost or doubled"),
        ("past the bound", "served past the bound"),
        ("race detector", "race detector report"),
      ]
      let kind = kinds.first { message.contains($0.0) }?.1 ?? "lost or doubled writes"
      return ("check fails", (kind, message))
    case .crashed(let detail):
      return ("crashes", ("crash", "the child crashed with no expected message: \(detail)"))
    }
  }
}
