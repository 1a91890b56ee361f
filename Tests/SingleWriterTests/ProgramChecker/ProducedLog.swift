/// The `produce` steps a task of a generated program ran, for its `drained()` steps to check:
/// a task-local, so that it lists only what this task queued (or ran) before, on whatever
/// thread it ran, and nothing that a body run on another thread for it produced.
final class ProducedLog: Sendable {
  @TaskLocal static var current: ProducedLog?

  private let entries = Locked([(x: ContainerName, producer: Int, count: Int)]())

  func add(_ x: ContainerName, producer: Int, count: Int) {
    entries.withLock { $0.append((x, producer, count)) }
  }

  /// The producers that queued or ran writes on x so far, and how many each.
  func owed(on x: ContainerName) -> [(producer: Int, count: Int)] {
    entries.withLock { $0.filter { $0.x == x }.map { ($0.producer, $0.count) } }
  }
}
