import Testing

@testable import SingleWriter

@Suite struct SoleReferenceTests {
  final class Object {}

  @Test func theReferenceCountWordIsReadableOnThisPlatform() {
    #expect(refCountWordIsReadable)
  }

  @Test func aLoneObjectIsItsSoleReference() {
    var object: Object? = Object()
    #expect(isSoleReference(&object))
  }

  @Test func aSecondStrongReferenceIsSeen() {
    var object: Object? = Object()
    let second = object
    #expect(!isSoleReference(&object))
    withExtendedLifetime(second) {}
  }

  @Test func aWeakReferenceIsSeenEvenAfterItIsGone() {
    var object: Object? = Object()
    weak let weak = object
    #expect(!isSoleReference(&object))
    _ = weak
  }

  @Test func anUnownedReferenceIsSeen() {
    final class Holder {
      unowned let object: Object
      init(_ object: Object) { self.object = object }
    }
    var object: Object? = Object()
    let holder = Holder(object!)
    #expect(!isSoleReference(&object))
    withExtendedLifetime(holder) {}
  }
}
