import Testing

@testable import SingleWriter

@Suite struct SoleReferenceTests {
  final class Object {}

  @Test func theReferenceCountWordIsReadableOnThisPlatform() {
    #expect(refCountWordIsReadable)
  }

  /// Both the one-load check and the runtime counters it falls back to.
  @Test(arguments: [true, false]) func aLoneObjectIsItsSoleReference(readable: Bool) {
    var object: Object? = Object()
    #expect(isSoleReference(&object, wordIsReadable: readable))
  }

  /// Both the one-load check and the runtime counters it falls back to.
  @Test(arguments: [true, false]) func aSecondStrongReferenceIsSeen(readable: Bool) {
    var object: Object? = Object()
    let second = object
    #expect(!isSoleReference(&object, wordIsReadable: readable))
    withExtendedLifetime(second) {}
  }

  /// Both the one-load check and the runtime counters it falls back to.
  @Test(arguments: [true, false]) func aWeakReferenceIsSeenEvenAfterItIsGone(readable: Bool) {
    var object: Object? = Object()
    weak let weak = object
    #expect(!isSoleReference(&object, wordIsReadable: readable))
    _ = weak
  }

  /// Both the one-load check and the runtime counters it falls back to.
  @Test(arguments: [true, false]) func anUnownedReferenceIsSeen(readable: Bool) {
    final class Holder {
      unowned let object: Object
      init(_ object: Object) { self.object = object }
    }
    var object: Object? = Object()
    let holder = Holder(object!)
    #expect(!isSoleReference(&object, wordIsReadable: readable))
    withExtendedLifetime(holder) {}
  }
}
