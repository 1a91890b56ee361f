/// A step of a program on a plain `SingleWriter` owned by an actor.
enum PlainStep: Sendable, Hashable, CustomStringConvertible {
  /// `if let p = box.writer { p.write.a += 1; await sleep; p.write.b += 1 }`
  case holdAcrossAwait(milliseconds: Int)
  case read
  case readClosure
  case tryWrite
  case writeNext
  case yield

  var description: String {
    switch self {
    case .holdAcrossAwait(let ms):
      return "if let p = box.writer { p.write.a += 1; await sleep(\(ms) ms); p.write.b += 1 }"
    case .read: return "_ = box.read"
    case .readClosure: return "box.read { _ in }"
    case .tryWrite: return "box.tryWrite { $0.a += 1; $0.b += 1 }"
    case .writeNext: return "box.writeNext { $0.write.a += 1; $0.write.b += 1 }"
    case .yield: return "await Task.yield()"
    }
  }
}
