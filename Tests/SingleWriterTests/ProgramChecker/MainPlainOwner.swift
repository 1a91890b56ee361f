import SingleWriter

/// A plain `SingleWriter` owned by the main actor: one method holds `writer` across an
/// `await` while others read and write it. Its accesses are all isolated to the main actor, so
/// the debug race detector must report nothing.
@MainActor final class MainPlainOwner {
  let box = SingleWriter(value: CheckedPair())
  private var issued = 0
  /// Whether a task holds `writer` now (across its `await`), and how many `writeNext`s
  /// queued behind it: `queuedWrites` must say exactly that after every step.
  private var held = false
  private var queuedBehind = 0
  private var failures: [String] = []

  private func checkQueued(_ moment: String) {
    let expected = held ? queuedBehind : 0
    if box.queuedWrites != expected {
      failures.append(
        "queuedWrites on the plain SingleWriter read \(box.queuedWrites) \(moment), where "
          + "\(expected) writes wait" + (held ? " behind the held writer" : " (none held)"))
    }
  }

  func run(_ steps: [PlainStep]) async {
    for step in steps {
      switch step {
      case .holdAcrossAwait(let milliseconds):
        if let proxy = box.writer {
          held = true
          issued += 1
          proxy.write.a += 1
          try? await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
          checkQueued("as the holder resumes")
          proxy.write.b += 1
          held = false
          queuedBehind = 0
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
        if held { queuedBehind += 1 }
        box.writeNext { proxy in
          proxy.write.a += 1
          proxy.write.b += 1
        }
      case .yield: await Task.yield()
      }
      checkQueued("after \(step)")
    }
  }

  /// The final value, the writes issued, and the failed `queuedWrites` checks.
  func result() -> (CheckedPair, Int, [String]) {
    checkQueued("at the end")
    return (box.read, issued, failures)
  }
}
