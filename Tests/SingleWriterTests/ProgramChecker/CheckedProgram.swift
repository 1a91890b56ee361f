/// A generated program: its roots (threads and tasks) on two thread-safe containers,
/// `changes()` consumers, or a plain `SingleWriter` owned by an actor.
struct CheckedProgram: Sendable {
  /// Which API the program exercises.
  enum Flavor: Sendable, Hashable {
    case threadSafe
    /// A plain `SingleWriter` owned by an actor (or the main actor), its tasks' steps.
    case plain(onMainActor: Bool, tasks: [[PlainStep]])
  }

  var seed: UInt64
  /// What the generator aimed at, for the summary.
  var theme: String
  var flavor: Flavor
  var roots: [ProgramRoot]
  /// A consumer iterates `changes()` of each of these while the program runs.
  var consumers: [ContainerName]
  /// Containers made with `init(value:maxQueuedWrites:)`, and their bound.
  var bounds: [ContainerName: Int] = [:]
  /// Each root starts once the one before it has ended (the lock-order theme).
  var sequential = false
  /// Each `produce` step queues its writes from a `Task.immediate` started where it runs,
  /// which runs inline, inside that step: the same promises hold as for the step itself
  /// (a holder's inline task queues past the bound, since the holder cannot go on).
  var inlineProducers = false

  /// The program as readable pseudo-code.
  var listing: String {
    var lines = ["program seed \(seed) (\(theme))"]
    switch flavor {
    case .plain(let onMain, let tasks):
      lines.append(
        "  let box = SingleWriter(value: Pair()) owned by "
          + (onMain ? "@MainActor" : "an actor"))
      for (index, steps) in tasks.enumerated() {
        lines.append("  task \(index + 1):")
        for step in steps { lines.append("    " + step.description) }
      }
    case .threadSafe:
      for (x, bound) in bounds.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
        lines.append(
          "  let \(x) = ThreadSafeSingleWriter(value: Pair(), maxQueuedWrites: \(bound))")
      }
      for consumer in consumers {
        lines.append("  consumer: for await v in \(consumer).changes() { check v.a == v.b }")
      }
      if sequential { lines.append("  (each root starts once the one before it has ended)") }
      if inlineProducers { lines.append("  (each produce queues from a Task.immediate)") }
      for (index, root) in roots.enumerated() {
        var head = "  root \(index + 1): \(root.kind)"
        if root.startDelay > 0 { head += ", starts after \(root.startDelay) ms" }
        if let cancel = root.cancelAfter { head += ", cancelled after \(cancel) ms" }
        lines.append(head)
        for step in root.steps { step.render("    ", into: &lines) }
      }
    }
    return lines.joined(separator: "\n")
  }
}
