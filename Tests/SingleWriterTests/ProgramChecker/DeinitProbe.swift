/// An object captured by a `writeNext` closure whose `deinit` calls back into a container.
final class DeinitProbe: Sendable {
  private let onDeinit: @Sendable () -> Void

  init(_ onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }

  func touch() {}

  deinit { onDeinit() }
}
