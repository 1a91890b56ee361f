/// Tells the Observation module that a tracked container changed. Not generic and not
/// availability-gated, so the hub can hold one on every OS the package supports.
@usableFromInline
protocol ChangeNotifier: AnyObject, Sendable {
  func notifyChange()
}
