/// Describing a container never changes it: reading the value here is a plain `read`, and
/// the writer's state is two stored fields, so printing is safe anywhere `read` is,
/// including inside this thread's own write, where it shows the write so far.
extension SingleWriter: CustomStringConvertible, CustomDebugStringConvertible {
  /// The value and the writer's state, for logs.
  ///
  /// ```swift
  /// let counter = SingleWriter(value: 42)
  /// let held = counter.writer
  /// counter.writeNext { $0.write += 1 }
  /// print(counter)  // SingleWriter<Int>(42, checked out, 1 queued)
  /// ```
  public var description: String {
    "SingleWriter<\(Value.self)>(\(describedState))"
  }

  /// ``description`` with the container's address, as race reports name it.
  public var debugDescription: String {
    "SingleWriter<\(Value.self)> \(Unmanaged.passUnretained(self).toOpaque()) (\(describedState))"
  }

  /// "42, checked out, 2 queued": the value as `debugPrint` shows it, then the state.
  var describedState: String {
    var text = String(reflecting: read)
    if isCheckedOut { text += ", checked out" }
    if pendingCount != 0 { text += ", \(pendingCount) queued" }
    return text
  }
}

extension WriterProxy: CustomStringConvertible, CustomDebugStringConvertible {
  /// The value this proxy writes, and how many writes wait for its checkout to end.
  ///
  /// ```swift
  /// if let proxy = counter.writer {
  ///   print(proxy)  // WriterProxy<Int>(42)
  /// }
  /// ```
  ///
  /// It never traps: a proxy whose checkout has ended shows `checkout ended` instead of
  /// the value.
  public var description: String {
    "WriterProxy<\(Value.self)>(\(describedState))"
  }

  /// ``description`` with the proxy's address.
  public var debugDescription: String {
    "WriterProxy<\(Value.self)> \(Unmanaged.passUnretained(self).toOpaque()) (\(describedState))"
  }

  var describedState: String {
    // An idle proxy holds no checkout (the container's parked spare, or a retired one):
    // say so rather than read through it.
    guard lease != .idle else { return "checkout ended" }
    var text = String(reflecting: owner.read)
    if owner.pendingCount != 0 { text += ", \(owner.pendingCount) queued" }
    return text
  }
}
