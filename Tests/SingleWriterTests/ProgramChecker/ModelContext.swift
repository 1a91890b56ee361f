/// What the current thread or task is inside of, per container, as the model sees it.
struct ModelContext: Hashable, Sendable {
  /// Inside `x.read { }`.
  var reading: Set<ContainerName> = []
  /// Inside a closure write of x (tryWrite, withWriter, `await write`): holds `writing`.
  var closureWriting: Set<ContainerName> = []
  /// Inside a `writeNext` body of x run on this thread: the checkout is marked as this
  /// thread's, but `writing` is only held during accesses.
  var lent: Set<ContainerName> = []
  /// Inside a write access through a proxy of x.
  var accessing: Set<ContainerName> = []
  /// Holds a proxy of x (writer, checkout(), a kept writeNext proxy), taken here.
  var holding: Set<ContainerName> = []
  /// A task rather than a thread.
  var inTask = false
  /// Behind a proxy of x held here, writes certainly queued, or may have (in steps before
  /// this one, in the same hold): a `drained()` here waits and warns, or may.
  var queuedBehind: Set<ContainerName> = []
  var mayHaveQueuedBehind: Set<ContainerName> = []
  /// A proxy of x that this task took was handed to a helper, which may still hold it:
  /// it is still the task's, so a `drained()` warns if writes wait behind it a second.
  var handedAway: Set<ContainerName> = []

  /// Whether x's writer is certainly out on this thread or task (so writes queue).
  func ownsCheckout(_ x: ContainerName) -> Bool {
    closureWriting.contains(x) || lent.contains(x) || holding.contains(x)
      || accessing.contains(x)
  }

  /// The context a queued body runs in on a thread that ends a checkout here.
  var serving: ModelContext {
    var copy = self
    copy.inTask = false
    copy.queuedBehind = []
    copy.mayHaveQueuedBehind = []
    copy.handedAway = []
    return copy
  }
}
