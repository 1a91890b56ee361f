import SingleWriterAtomics

/// Describing a container never waits and never stops the program: the value is read only
/// if no write access holds it (otherwise it shows `<being written>`), so printing works
/// inside this thread's own `tryWrite` or `withWriter`, where `read` would stop, and
/// while another thread writes, where `read` would wait. Queued writes are shown as a flag,
/// not a count: counting them would walk a queue that the checkout holder may be emptying
/// on another thread. Each part is a snapshot of its own: another thread may change the
/// value or the writer in between.
extension ThreadSafeSingleWriter: CustomStringConvertible, CustomDebugStringConvertible {
  /// The value and the writer's state, for logs.
  ///
  /// ```swift
  /// let counter = ThreadSafeSingleWriter(value: 42)
  /// let held = counter.writer
  /// counter.writeNext { $0.write += 1 }
  /// print(counter)  // ThreadSafeSingleWriter<Int>(42, checked out, writes queued)
  /// ```
  public var description: String {
    "ThreadSafeSingleWriter<\(Value.self)>(\(describedState))"
  }

  /// ``description`` with the container's address.
  public var debugDescription: String {
    let address = Unmanaged.passUnretained(self).toOpaque()
    return "ThreadSafeSingleWriter<\(Value.self)> \(address) (\(describedState))"
  }

  /// "42, checked out, writes queued"; the value as `debugPrint` shows it.
  var describedState: String {
    var text = debugTryRead().map { String(reflecting: $0) } ?? "<being written>"
    if debugIsCheckedOut { text += ", checked out" }
    if debugHasQueuedWrites { text += ", writes queued" }
    return text
  }
}

extension ThreadSafeWriterProxy: CustomStringConvertible, CustomDebugStringConvertible {
  /// The value this proxy writes, and whether writes wait for the checkout to end.
  ///
  /// ```swift
  /// if let proxy = counter.writer {
  ///   print(proxy)  // ThreadSafeWriterProxy<Int>(42)
  /// }
  /// ```
  ///
  /// Like the container's description, it never waits and never stops the program; with
  /// the writer free, it shows `checkout ended`.
  public var description: String {
    "ThreadSafeWriterProxy<\(Value.self)>(\(describedState))"
  }

  /// ``description`` with the proxy's address.
  public var debugDescription: String {
    let address = Unmanaged.passUnretained(self).toOpaque()
    return "ThreadSafeWriterProxy<\(Value.self)> \(address) (\(describedState))"
  }

  var describedState: String {
    guard owner.debugIsCheckedOut else { return "checkout ended" }
    var text = owner.debugTryRead().map { String(reflecting: $0) } ?? "<being written>"
    if owner.debugHasQueuedWrites { text += ", writes queued" }
    return text
  }
}

// What the descriptions need from the container, from any thread, without waiting,
// trapping or walking the queue that the checkout holder may be emptying.
extension ThreadSafeSingleWriter {
  /// Someone holds the checkout; a relaxed snapshot, not a synchronization.
  var debugIsCheckedOut: Bool { lock.word.isCheckedOut }

  /// Writes wait for the checkout to end.
  var debugHasQueuedWrites: Bool { lock.word.isQueued }

  /// The value, or `nil` while a write access holds it (on another thread, or in this
  /// thread's own `tryWrite` or `withWriter`).
  func debugTryRead() -> Value? {
    guard lock.tryBeginRead() else { return nil }
    defer { lock.endRead() }
    return storage.pointee
  }
}
