import Testing

@testable import SingleWriter

// "A throw undoes: ... Its copy, like the value a commit replaces, is freed once the
// writer is free again: a `deinit` there may write to the container." The single-thread
// `SingleWriter.transaction` declared its copy after the `defer` that ends the checkout,
// so the copy (the value from before, after the commit's swap, or a throwing body's copy)
// was freed with the checkout still held: a `deinit` there found the writer busy.

/// Runs `onDeinit` when freed; confined to the test's thread, as its container is.
private final class PlainCallsBack {
  let onDeinit: () -> Void
  init(_ onDeinit: @escaping () -> Void) { self.onDeinit = onDeinit }
  deinit { onDeinit() }
}

private struct PlainWithToken {
  var count = 0
  var token: PlainCallsBack?
}

@Suite struct AttackPassPlainTransactionDeinit {
  @Test func theValueACommitReplacesIsFreedWithTheWriterFree() {
    let box = SingleWriter(value: PlainWithToken())
    var wrote: Bool?
    box.writer!.write.token = PlainCallsBack { wrote = box.tryWrite { $0.count += 100 } }
    let committed = box.transaction { value -> Bool in
      value.count += 1
      value.token = nil  // the token now lives only in the value from before
      return true
    }
    #expect(committed == true)
    #expect(wrote == true, "the deinit found the writer busy")
    #expect(box.read.count == 101)
  }

  @Test func aThrowingBodysCopyIsFreedWithTheWriterFree() {
    let box = SingleWriter(value: PlainWithToken())
    var wrote: Bool?
    #expect(throws: Abandon.self) {
      _ = try box.transaction { (value: inout PlainWithToken) throws(Abandon) in
        value.token = PlainCallsBack { wrote = box.tryWrite { $0.count += 100 } }
        throw Abandon()
      }
    }
    #expect(wrote == true, "the deinit found the writer busy")
    #expect(box.read.count == 100)
  }
}
