import Dispatch
import SingleWriterAtomics

/// An object that only ever runs one message at a time, on its own queue.
///
/// Give an object to a `Confined` and it is reachable only through messages:
/// ``tell(_:)`` sends a closure that runs later on the object's queue, and
/// ``ask(_:)`` does the same and suspends until the answer comes back. Messages run
/// one at a time and in the order they were sent, so the object needs no locks of its
/// own; the object is `sending`, so the compiler makes sure nothing else holds it.
///
/// ```swift
/// final class Counter { var count = 0 }
/// let counter = Confined(Counter())
///
/// counter.tell { $0.count += 1 }          // fire and forget
/// counter.tell { $0.count += 1 }
/// let count = await counter.ask { $0.count }  // 2: sees every earlier tell
///
/// let label = Confined(Label(), queue: .main)  // UI objects live on the main queue
/// label.tell { $0.text = "Done" }
/// ```
///
/// Each object gets one `Confined`: confining an object that a live `Confined` already
/// holds stops the program with a message. Share the `Confined` instead; it is
/// `Sendable`.
public final class Confined<Object: AnyObject>: @unchecked Sendable {
  // Sendable because the object is only touched inside `drain`, and `drain` runs
  // once at a time on `queue`: a drain is scheduled only by the call that finds
  // `isScheduled` false and sets it, under `lock`, and only the drain clears it.
  // `pending` and `isScheduled` are read and written only with `lock` held;
  // `reserve` only inside `drain`. The messages in `pending` were `sending`, so
  // nothing outside can reach what they capture.

  /// Retained by hand so that `deinit` can hand the last reference to `queue`.
  @usableFromInline let object: Unmanaged<Object>
  @usableFromInline let lock: UnsafeMutablePointer<sw_mutex>
  /// The thread running a drain, or 0; for the on-queue checks.
  @usableFromInline let runner: UnsafeMutablePointer<sw_atomic_uptr>
  @usableFromInline @exclusivity(unchecked) var pending: ContiguousArray<Message> = []
  @usableFromInline @exclusivity(unchecked) var isScheduled = false
  /// An emptied batch kept for its capacity, so steady traffic does not allocate.
  @exclusivity(unchecked) var reserve: ContiguousArray<Message> = []

  /// The queue the object's messages run on.
  ///
  /// Messages run on it one at a time even if it is concurrent or shared with other
  /// work, because each `Confined` keeps its own mailbox and drains it from one block.
  public let queue: DispatchQueue

  @usableFromInline typealias Message = ((Object) -> Void)?

  /// Confines `object` to `queue`, or to a new serial queue of its own.
  ///
  /// The new queue's label is `singlewriter.confined.` followed by the type's name,
  /// which is what a debugger or a crash report shows. Pass `.main` for an object
  /// that belongs on the main queue, such as a view.
  ///
  /// Stops the program if a live `Confined` already holds `object`.
  public init(_ object: sending Object, queue: DispatchQueue? = nil) {
    guard ConfinementRegistry.shared.claim(ObjectIdentifier(object)) else {
      alreadyConfinedFailure(Object.self)
    }
    self.object = .passRetained(object)
    self.queue = queue ?? DispatchQueue(label: "singlewriter.confined.\(Object.self)")
    lock = .allocate(capacity: 1)
    lock.initialize(to: sw_mutex())
    runner = .allocate(capacity: 1)
    runner.initialize(to: sw_atomic_uptr())
  }

  deinit {
    // No message is pending or running: a scheduled drain holds a strong reference.
    // The entry goes before the object does (see `ConfinementRegistry`), and the
    // object's last release happens on its queue, so even its `deinit` runs there.
    // Unchecked: after this line only the block below uses `object`.
    nonisolated(unsafe) let object = object
    ConfinementRegistry.shared.release(ObjectIdentifier(object.takeUnretainedValue()))
    queue.async { object.release() }
    lock.deinitialize(count: 1)
    lock.deallocate()
    runner.deinitialize(count: 1)
    runner.deallocate()
  }

  /// Sends `message` to run later on the object's queue, and returns at once.
  ///
  /// Messages from one sender run in the order they were sent, one at a time, and
  /// never inside the call to `tell`, not even when it is called from a message.
  ///
  /// ```swift
  /// model.tell { $0.salary = 50_000 }
  /// ```
  @inlinable
  public func tell(_ message: sending @escaping (Object) -> Void) {
    sw_mutex_lock(lock)
    pending.append(message)
    let wasIdle = !isScheduled
    isScheduled = true
    sw_mutex_unlock(lock)
    if wasIdle { schedule() }
  }

  /// Sends `question` to run on the object's queue, and suspends until it has run.
  ///
  /// The question runs after every message sent before it, so it sees their effects.
  /// The calling task suspends; no thread waits. The answer must be `Sendable`, so
  /// the object itself cannot come back out this way.
  ///
  /// ```swift
  /// let tax = await model.ask { $0.tax }
  /// ```
  @inlinable
  public func ask<R: Sendable>(_ question: sending @escaping (Object) -> R) async -> R {
    // Unchecked: `question` was sent to us, and only the message below uses it.
    nonisolated(unsafe) let question = question
    return await withCheckedContinuation { continuation in
      tell { continuation.resume(returning: question($0)) }
    }
  }

  /// Checks, in debug builds, that the caller is running inside one of this object's
  /// messages, and so on ``queue`` with no other message running.
  ///
  /// Call it from the object's methods to catch a reference that got out, for
  /// instance through a `nonisolated(unsafe)` variable. Compiled out in release builds
  /// (`-O`), like `assert`; use ``preconditionOnQueue(file:line:)`` to keep the check.
  ///
  /// ```swift
  /// func render() {
  ///   confined?.assertOnQueue()
  ///   ...
  /// }
  /// ```
  @inlinable
  public func assertOnQueue(file: StaticString = #fileID, line: UInt = #line) {
    assert(
      isRunningMessage, "not running a message of the Confined on queue \"\(queue.label)\"",
      file: file, line: line)
  }

  /// Checks, in every build, that the caller is running inside one of this object's
  /// messages; stops the program with a message if not.
  ///
  /// It costs a thread-id lookup and an atomic load.
  ///
  /// ```swift
  /// confined.preconditionOnQueue()
  /// ```
  @inlinable
  public func preconditionOnQueue(file: StaticString = #fileID, line: UInt = #line) {
    if !isRunningMessage { notInMessageFailure(queue.label, file: file, line: line) }
  }

  /// Whether the calling thread is inside this object's drain. Only the draining
  /// thread stores its own id, and it clears it before leaving, so a thread reads its
  /// own id here exactly when it is inside the drain.
  @inlinable
  var isRunningMessage: Bool {
    sw_uptr_load(runner) == sw_current_thread()
  }

  @usableFromInline
  func schedule() {
    queue.async { self.drain() }
  }

  /// Runs every message waiting now, then reschedules itself if more arrived: later
  /// messages wait for the next block, so other work on a shared queue (the main
  /// queue) gets its turn in between.
  func drain() {
    var batch = reserve
    reserve = []
    sw_mutex_lock(lock)
    swap(&batch, &pending)
    sw_mutex_unlock(lock)

    let object = object.takeUnretainedValue()
    sw_uptr_store(runner, sw_current_thread())
    for index in batch.indices {
      // Taken out first so that each message's captures are freed as it finishes.
      let message = batch[index].take()!
      message(object)
    }
    sw_uptr_store(runner, 0)
    // Keep a small buffer for steady traffic; give back the one a burst left behind.
    batch.removeAll(keepingCapacity: batch.capacity <= 1024)
    reserve = batch

    sw_mutex_lock(lock)
    let hasMore = !pending.isEmpty
    isScheduled = hasMore
    sw_mutex_unlock(lock)
    if hasMore { schedule() }
  }
}
