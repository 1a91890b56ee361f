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
    final class Holder { var object: Object? }
    var object: Object? = Object()
    let holder = Holder()
    holder.object = object  // a real second reference, which release builds keep
    #expect(!isSoleReference(&object, wordIsReadable: readable))
    holder.object = nil
    #expect(isSoleReference(&object, wordIsReadable: readable))
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
