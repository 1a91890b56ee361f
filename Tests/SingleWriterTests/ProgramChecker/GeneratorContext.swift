/// Where the generator is placing steps: what limits the calls it may pick there.
struct GeneratorContext {
  /// The steps run in a task's own flow, so `await` calls are allowed.
  var isAsync: Bool
  /// Inside a task (blocking calls there occupy a pool thread).
  var inTask: Bool
  /// This root may nest calls on A inside calls on B (the probe root); others nest only B
  /// inside A, so that no two threads can wait for each other's container.
  var mayCross: Bool
  /// Another root already nests both ways (a themed one): this root nests no container
  /// inside the other at all, since reads, which the lock-order check does not see, would
  /// close a cycle that deadlocks unreported.
  var crossFree = false
  /// Containers whose read, write or proxy encloses this point.
  var enclosing: Set<ContainerName> = []
  /// Inside a body that may be queued and run on another thread: same container only.
  var queuedBody = false
  var depth = 0

  /// The containers a nested call may use here.
  var allowed: [ContainerName] {
    if queuedBody, let only = enclosing.first, enclosing.count == 1 { return [only] }
    if crossFree, !enclosing.isEmpty { return Array(enclosing) }
    if mayCross && !queuedBody { return [.a, .b] }
    return enclosing.contains(.b) ? [.b] : [.a, .b]
  }

  func entering(_ x: ContainerName, sync: Bool = true, queued: Bool = false) -> Self {
    var copy = self
    copy.enclosing.insert(x)
    copy.depth += 1
    if sync { copy.isAsync = false }
    if queued { copy.queuedBody = true }
    return copy
  }
}
