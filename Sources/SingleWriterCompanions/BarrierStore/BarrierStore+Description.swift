/// Names the store and its backing only. The entry count would need the store's lock or
/// a trip through its queue, which a description must not take: it may be printed from a
/// key's `hash(into:)` inside an operation, where either would wait for itself.
extension BarrierStore: CustomStringConvertible, CustomDebugStringConvertible {
  /// The store's types and backing, for logs.
  ///
  /// ```swift
  /// print(BarrierStore<String, Int>())  // BarrierStore<String, Int>(readWriteLock)
  /// ```
  public var description: String {
    "BarrierStore<\(Key.self), \(Value.self)>(\(backing))"
  }

  /// ``description`` with the store's address.
  public var debugDescription: String {
    let address = Unmanaged.passUnretained(self).toOpaque()
    return "BarrierStore<\(Key.self), \(Value.self)> \(address) (\(backing))"
  }
}
