/// One of the two `ThreadSafeSingleWriter` containers of a generated program.
enum ContainerName: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  case a, b

  var description: String { self == .a ? "A" : "B" }

  var other: ContainerName { self == .a ? .b : .a }
}
