import SingleWriter
import Testing

// The README's pattern for holding a checkout up to a point: the proxy in a scope of its
// own, the code that needs the checkout inside `withExtendedLifetime(proxy) { … }`. Debug
// builds keep a variable to the end of its scope and optimized builds may release it after
// its last use; with this pattern both end the checkout where the block ends (CI runs this
// suite in debug and in release).
@Suite struct CheckoutScopeTests {
  @Test func aPlainCheckoutHeldThisWayEndsWhereItsBlockEnds() {
    let user = SingleWriter(value: 0)
    if let held = user.writer {
      held.write = 1
      user.writeNext { $0.write += 10 }  // queued behind `held`
      withExtendedLifetime(held) {
        #expect(user.writer == nil, "the checkout is out for the whole closure")
        #expect(user.read == 1, "the queued write waits for the checkout")
      }
    }
    #expect(user.read == 11, "the block's end released the proxy and ran the queued write")
    #expect(user.writer != nil, "the writer is free after the block, in every build")
  }

  @Test func aThreadSafeCheckoutHeldThisWayEndsWhereItsBlockEnds() {
    let stats = ThreadSafeSingleWriter(value: 0)
    do {
      guard let held = stats.writer else {
        Issue.record("the writer was busy")
        return
      }
      held.write = 1
      stats.writeNext { $0.write += 10 }
      withExtendedLifetime(held) {
        #expect(stats.writer == nil, "the checkout is out for the whole closure")
        #expect(!stats.tryWrite({ $0 += 100 }), "a closure write is refused meanwhile")
      }
    }
    #expect(stats.read == 11)
    #expect(stats.writer != nil, "the writer is free after the block, in every build")
  }
}
