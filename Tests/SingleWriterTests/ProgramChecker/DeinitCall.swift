/// What the `deinit` of an object captured by a `writeNext` closure calls.
enum DeinitCall: Sendable, Hashable {
  case writeNext, read, withWriter
}
