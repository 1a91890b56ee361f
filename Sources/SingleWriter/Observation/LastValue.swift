/// A container's value, kept by its hub after the container is gone, or as a snapshot of
/// a checkout's end.
final class LastValue<Value> {
  let value: Value
  init(_ value: Value) { self.value = value }
}
