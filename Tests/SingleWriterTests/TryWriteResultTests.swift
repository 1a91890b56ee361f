import SingleWriter
import Testing

// `tryWrite` says whether it wrote: a body that returns nothing gets a `Bool` (an unused
// result warns, so a dropped write is never silent), a body that returns a value gets it
// or `nil`. Both containers.
@Suite struct TryWriteResultTests {
  @Test func aPlainTryWriteSaysWhetherItWrote() {
    let box = SingleWriter(value: 0)
    let wrote: Bool = box.tryWrite { $0 += 1 }
    #expect(wrote)
    let held = box.writer
    let refused: Bool = box.tryWrite { $0 += 1 }
    #expect(!refused, "the checkout is out: nothing written")
    let value: Int? = box.tryWrite { $0 }
    #expect(value == nil)
    withExtendedLifetime(held) {}
    #expect(box.read == 1)
  }

  @Test func aThreadSafeTryWriteSaysWhetherItWrote() {
    let box = ThreadSafeSingleWriter(value: 0)
    let wrote: Bool = box.tryWrite { $0 += 1 }
    #expect(wrote)
    do {
      guard let held = box.writer else {
        Issue.record("the writer was busy")
        return
      }
      withExtendedLifetime(held) {
        let refused: Bool = box.tryWrite { $0 += 1 }
        #expect(!refused, "the checkout is out: nothing written")
        let value: Int? = box.tryWrite { $0 }
        #expect(value == nil)
      }
    }
    #expect(box.tryWrite { $0 } == 1, "a body's value comes back when the writer is free")
  }
}
