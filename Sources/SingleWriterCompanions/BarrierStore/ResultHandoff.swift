/// Carries a queued operation's result to its completion, which takes it out.
@usableFromInline
final class ResultHandoff<R: Sendable>: @unchecked Sendable {
  // Sendable: written by the init, then taken once by the completion, which runs after the
  // `async` that published this object.
  @usableFromInline var value: R?
  @usableFromInline init(_ value: R) { self.value = value }
  @usableFromInline func take() -> R { value.take().unsafelyUnwrapped }
}
