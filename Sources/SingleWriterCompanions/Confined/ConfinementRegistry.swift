import SingleWriterAtomics

/// The objects that a live ``Confined`` holds, so that confining one twice stops
/// the program instead of giving it two queues.
///
/// An entry is the object's `ObjectIdentifier`. It cannot be stale: a `Confined`
/// keeps its object alive, and removes the entry in its `deinit`, before it lets the
/// object go. So while an entry exists its object exists, and no other object can
/// have been given the same address.
final class ConfinementRegistry: @unchecked Sendable {
  // Sendable because `claimed` is only read or written with `lock` held, and `lock`
  // lives at a stable heap address for the life of the process.
  private let lock: UnsafeMutablePointer<sw_mutex>
  private var claimed: Set<ObjectIdentifier> = []

  static let shared = ConfinementRegistry()

  private init() {
    lock = .allocate(capacity: 1)
    lock.initialize(to: sw_mutex())
  }

  /// Records `object` as confined; `false` if it already was.
  func claim(_ object: ObjectIdentifier) -> Bool {
    sw_mutex_lock(lock)
    defer { sw_mutex_unlock(lock) }
    return claimed.insert(object).inserted
  }

  func release(_ object: ObjectIdentifier) {
    sw_mutex_lock(lock)
    defer { sw_mutex_unlock(lock) }
    claimed.remove(object)
  }
}

/// Stops on a second `Confined` for one object. Out of line, and `fatalError` so the
/// message survives release builds.
@inline(never)
func alreadyConfinedFailure(_ type: Any.Type) -> Never {
  fatalError(
    """
    this \(type) is already confined by a live Confined: an object gets exactly one \
    Confined, so that its messages run one at a time on one queue; share that Confined \
    (it is Sendable) instead of confining the object again
    """
  )
}

/// Stops when an object is used outside its messages; see `Confined.preconditionOnQueue`.
@usableFromInline @inline(never)
func notInMessageFailure(_ label: String, file: StaticString, line: UInt) -> Never {
  fatalError(
    "not running a message of the Confined on queue \"\(label)\": its object may only be "
      + "touched inside tell or ask",
    file: file, line: line)
}
