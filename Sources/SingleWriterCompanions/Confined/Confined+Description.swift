/// Names the object's type and queue only: the object may be touched only inside its own
/// messages, so a description cannot show it without sending one.
extension Confined: CustomStringConvertible, CustomDebugStringConvertible {
  /// The object's type and the queue its messages run on, for logs.
  ///
  /// ```swift
  /// print(Confined(Model()))  // Confined<Model>(queue: "singlewriter.confined.Model")
  /// ```
  public var description: String {
    "Confined<\(Object.self)>(queue: \(String(reflecting: queue.label)))"
  }

  /// ``description`` with the `Confined`'s address.
  public var debugDescription: String {
    let address = Unmanaged.passUnretained(self).toOpaque()
    return "Confined<\(Object.self)> \(address) (queue: \(String(reflecting: queue.label)))"
  }
}
