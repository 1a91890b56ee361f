import Observation
import SingleWriterAtomics

/// A container's link to the Observation module: its registrar, the key path that
/// tracked reads register, and the notification a changing checkout sends.
///
/// Reached only through ``ChangeHub``'s `notifier`, so no container stores a property of
/// this availability-gated type.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@usableFromInline
final class ObservationTracker<Subject: Observable & AnyObject, Member>: ChangeNotifier,
  @unchecked Sendable
{
  // Sendable: the registrar is Sendable and the key path is immutable. `subject` is
  // touched only by `notifyChange`, which runs where the subject's checkouts end: on
  // its own thread for a SingleWriter, on any thread for a ThreadSafeSingleWriter,
  // which is Sendable whenever it can be observed.
  @usableFromInline let registrar = ObservationRegistrar()
  @usableFromInline let keyPath: KeyPath<Subject, Member>
  /// Unretained: the subject owns the hub that owns this tracker, and only the living
  /// subject publishes.
  unowned(unsafe) let subject: Subject

  /// 0 idle, 1 notifying, 3 notifying with another change to send when done. An
  /// `onChange` handler runs inside `willSet`; if it writes, the nested notification is
  /// folded into the running one instead of recursing into the registrar.
  let notifying: UnsafeMutablePointer<sw_atomic_u32>

  init(subject: Subject, keyPath: KeyPath<Subject, Member>) {
    self.subject = subject
    self.keyPath = keyPath
    notifying = .allocate(capacity: 1)
    notifying.initialize(to: sw_atomic_u32())
  }

  deinit { notifying.deallocate() }

  /// Registers a tracked read of `subject`.
  @inlinable func access(_ subject: Subject) {
    registrar.access(subject, keyPath: keyPath)
  }

  /// One changing checkout has ended: both halves of a mutation, after the fact.
  @usableFromInline func notifyChange() {
    var idle: UInt32 = 0
    guard sw_cas(notifying, &idle, 1) else {
      sw_fetch_or(notifying, 2)  // the running notification sends one more
      return
    }
    while true {
      registrar.willSet(subject, keyPath: keyPath)
      registrar.didSet(subject, keyPath: keyPath)
      var running: UInt32 = 1
      if sw_cas(notifying, &running, 0) { return }
      sw_store_release(notifying, 1)  // another change came meanwhile: send it too
    }
  }
}
