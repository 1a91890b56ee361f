import SingleWriter

/// A plain `SingleWriter` owned by the main actor: one method holds `writer` across an
/// `await` while others read and write it. Its accesses are all isolated to the main actor, so
/// the debug race detector must report nothing.
@MainActor final class MainPlainOwner {
  let box = SingleWriter(value: CheckedPair())
  private var issued = 0

  func run(_ steps: [PlainStep]) async {
    for step in steps {
      switch step {
      case .holdAcrossAwait(let milliseconds):
        if let proxy = box.writer {
          issued += 1
          proxy.write.a += 1
          try? await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
          proxy.write.b += 1
        }
      case .read: _ = box.read
      case .readClosure: _ = box.read().a
      case .tryWrite:
        let done: Void? = box.tryWrite { value in
          value.a += 1
          value.b += 1
        }
        if done != nil { issued += 1 }
      case .writeNext:
        issued += 1
        box.writeNext { proxy in
          proxy.write.a += 1
          proxy.write.b += 1
        }
      case .yield: await Task.yield()
      }
    }
  }

  /// The final value and the writes issued.
  func result() -> (CheckedPair, Int) { (box.read, issued) }
}
