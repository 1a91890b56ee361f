/// What a `changes()` consumer found when it read its container.
@usableFromInline
enum ChangeRead<Element> {
  /// The value as a checkout ended with it.
  case value(Element)
  /// A checkout that has written is still held, so the value may be half done: the
  /// consumer waits for that checkout's end, which publishes.
  case halfDone
  /// The container is being freed: its final value comes from the hub.
  case gone
}
