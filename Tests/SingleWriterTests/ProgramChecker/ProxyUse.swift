/// What a step that holds a proxy (`writer`, `checkout()`, a `writeNext` body) does with
/// it: always `a += 1` and `b += 1` in two accesses, its nested steps in between.
enum ProxyUse: Sendable, Hashable {
  /// `p.write.a += 1; <nested>; p.write.b += 1`, released here.
  case twoAccesses
  /// `p.write.a += 1; p.write.visit { <nested> }; p.write.b += 1`: nested steps inside a
  /// write access.
  case insideAccess
  /// `p.write.a += 1; <nested>`, then a new thread sleeps 2 ms, writes `b` and releases.
  case handToThread
  /// The same, with a detached task.
  case handToTask
  /// `writeNext` only: the body keeps the proxy for the caller, which runs `<nested>`
  /// after `writeNext` returned, still holding it, then writes `b` and releases.
  case keepHere

  /// Where the listing opens the access the nested steps run in, if any.
  var opening: String { self == .insideAccess ? " p.write.visit {" : "" }
  var closing: String { self == .insideAccess ? "}; " : "" }

  var label: String {
    switch self {
    case .twoAccesses: return "use"
    case .insideAccess: return "inside-access"
    case .handToThread: return "hand-to-thread"
    case .handToTask: return "hand-to-task"
    case .keepHere: return "keep-here"
    }
  }
}
