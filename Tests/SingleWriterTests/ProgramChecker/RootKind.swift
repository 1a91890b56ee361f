/// Where a root of a generated program runs.
enum RootKind: Sendable, Hashable, CustomStringConvertible {
  case thread, mainActor, actor, pool

  var isTask: Bool { self != .thread }

  var description: String {
    switch self {
    case .thread: return "Thread"
    case .mainActor: return "Task @MainActor"
    case .actor: return "Task on an actor"
    case .pool: return "Task.detached"
    }
  }
}
