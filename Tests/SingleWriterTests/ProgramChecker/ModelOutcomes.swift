/// The ways a (part of a) program may end, as the model allows them.
struct ModelOutcomes: OptionSet, Hashable, Sendable, CustomStringConvertible {
  let rawValue: Int

  /// Runs to its end, every check passing.
  static let complete = ModelOutcomes(rawValue: 1)
  /// Stops with a "would wait forever" message.
  static let stop = ModelOutcomes(rawValue: 2)
  /// A documented self-deadlock: "has waited 1 s", the withWriter warning ("same thread").
  static let warnThread = ModelOutcomes(rawValue: 4)
  /// The `await write` / `checkout()` warning ("same task").
  static let warnTask = ModelOutcomes(rawValue: 8)

  static let warn: ModelOutcomes = [.warnThread, .warnTask]

  /// `self`, then `next` if `self` may complete.
  func then(_ next: ModelOutcomes) -> ModelOutcomes {
    guard contains(.complete) else { return self }
    return subtracting(.complete).union(next)
  }

  /// Concurrent parts: any may stop or warn first; all must complete to complete.
  static func concurrent(_ parts: [ModelOutcomes]) -> ModelOutcomes {
    var result: ModelOutcomes = []
    var all = true
    for part in parts {
      result.formUnion(part.subtracting(.complete))
      all = all && part.contains(.complete)
    }
    if all { result.insert(.complete) }
    return result
  }

  var description: String {
    var names: [String] = []
    if contains(.complete) { names.append("completes") }
    if contains(.stop) { names.append("stops") }
    if contains(.warnThread) { names.append("warns (same thread)") }
    if contains(.warnTask) { names.append("warns (same task)") }
    return names.isEmpty ? "nothing" : names.joined(separator: " or ")
  }
}
