/// One thread or task of a generated program, started with the others.
struct ProgramRoot: Sendable {
  var kind: RootKind
  /// Waits this long before its first step.
  var startDelay: Int
  /// Cancels the task this long after it started, if set.
  var cancelAfter: Int?
  var steps: [ProgramStep]
}
