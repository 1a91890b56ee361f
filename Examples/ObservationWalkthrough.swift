import Observation
import SingleWriter

/// The state behind a shop screen.
struct ShopState: Equatable, Sendable {
  var userName = "Ann"
  var cart: [String] = []
}

/// A SwiftUI-shaped view model: views read through `trackedRead`, so the Observation
/// module re-renders them once per checkout that wrote; `read` would register nothing.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor final class ShopModel {
  let state = SingleWriter(value: ShopState())

  var title: String { "Hello, \(state.trackedRead.userName)" }
  var cartSummary: String { "\(state.trackedRead.cart.count) items" }

  func add(_ item: String) { state.writeNext { $0.write.cart.append(item) } }

  /// Two writes in one checkout: views see the result once, never the half-done state.
  func rename(_ name: String, clearingCart: Bool) {
    guard let writer = state.writer else { return }
    writer.write.userName = name
    if clearingCart { writer.write.cart.removeAll() }
  }
}

/// Stands in for a SwiftUI view: renders inside `withObservationTracking`, as `body`
/// is, and renders again after the next change.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor final class ShopScreen {
  let model: ShopModel
  var renders = 0

  init(model: ShopModel) { self.model = model }

  func render() {
    withObservationTracking {
      renders += 1
      print("render #\(renders): \(model.title), \(model.cartSummary)")
    } onChange: { [weak self] in
      Task { @MainActor in self?.render() }  // SwiftUI schedules the next frame likewise
    }
  }
}

/// Observing state: tracked reads for views, `changes()` streams for tasks.
@MainActor func observationWalkthrough() async {
  guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else {
    print("the Observation module needs macOS 14 / iOS 17")
    return
  }
  let model = ShopModel()

  // What SwiftUI does for a view's `body`: track the reads, hear about the next change.
  let screen = ShopScreen(model: model)
  screen.render()
  model.add("apple")
  await Task.yield()
  model.rename("Bo", clearingCart: true)  // one checkout, two writes: one re-render
  await Task.yield()
  _ = model.state.writer  // a checkout that writes nothing: no re-render
  await Task.yield()
  print("renders: \(screen.renders)")  // 3

  // A task that follows one property; cart updates do not wake it. It resumes on the
  // main actor directly, where the container lives.
  let names = model.state.changes(of: \.userName)
  let follower = Task { @MainActor in
    var seen: [String] = []
    for await name in names {
      seen.append(name)
      if name == "Cy" { break }
    }
    return seen
  }
  await Task.yield()
  model.add("pear")
  model.add("plum")
  model.rename("Cy", clearingCart: false)
  print("names seen: \(await follower.value)")  // ["Bo", "Cy"]

  // Across threads: idle streams cost the writers one version bump per checkout, and a
  // slow consumer gets the newest value, not a backlog.
  let hits = ThreadSafeSingleWriter(value: 0)
  let idle = (0..<10).map { _ in hits.changes() }
  var newest = hits.changes().makeAsyncIterator()
  for _ in 0..<1_000 { _ = hits.tryWrite { $0 += 1 } }
  print("newest after 1000 writes: \(await newest.next() ?? -1)")  // 1000
  _ = idle
}

/// The article's follower, as it appears there: one property, on the main actor.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor func followUserName(of model: ShopModel) -> Task<Void, Never> {
  let names = model.state.changes(of: \.userName)
  return Task { @MainActor in
    for await name in names {
      print("now \(name)")  // cart updates do not wake this task
    }
  }
}
