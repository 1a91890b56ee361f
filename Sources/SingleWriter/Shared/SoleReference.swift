import SingleWriterAtomics

/// Whether `object` is referenced by its one strong reference and nothing else: no other
/// strong, weak or unowned reference. A lent proxy that passes can be lent again; one that
/// fails was kept, or can still be reached, so it must never be reused.
///
/// Strong references are counted by `isKnownUniquelyReferenced`, which the optimizer
/// treats as reading the count: it never moves a retain across it. Weak and unowned ones
/// then cost one load of the count word when `wordIsReadable`, else the runtime's
/// counters, which cost a call each.
///
/// `wordIsReadable` is `refCountWordIsReadable`, which callers copy once into a stored
/// property: reading a lazy global from another module costs a call every time.
@inlinable @inline(__always)
func isSoleReference<Object: AnyObject>(_ object: inout Object?, wordIsReadable: Bool) -> Bool {
  guard isKnownUniquelyReferenced(&object) else { return false }
  if wordIsReadable {
    return isPristine(sw_refcount_bits(Unmanaged.passUnretained(object!).toOpaque()))
  }
  return _getWeakRetainCount(object!) <= 1 && _getUnownedRetainCount(object!) <= 1
}

/// The inline count of an object with one strong reference and nothing else: the
/// unowned count is 1 (the strong references' own), every other field is 0, and there is
/// no side table. Bit 0, "pure Swift deallocation", varies by class. The same pattern on
/// 32- and 64-bit targets.
@inlinable @inline(__always)
func isPristine(_ bits: UInt) -> Bool { bits & ~1 == 2 }

/// Whether the runtime's inline count has the layout `isPristine` expects, checked once on
/// a real object: pristine alone, and not pristine with a second strong, a weak or an
/// unowned reference. False sends `isSoleReference` to the runtime's counters.
@usableFromInline
let refCountWordIsReadable: Bool = {
  final class Probe {}
  // Holders for the unowned and weak references, on the heap so that the optimizer
  // cannot drop them.
  final class UnownedBox {
    unowned let object: AnyObject
    @inline(never) init(_ object: AnyObject) { self.object = object }
  }
  final class WeakBox {
    weak var object: AnyObject?
    @inline(never) init(_ object: AnyObject) { self.object = object }
  }
  let probe = Probe()
  func bits() -> UInt { sw_refcount_bits(Unmanaged.passUnretained(probe).toOpaque()) }
  guard isPristine(bits()) else { return false }
  let second = Unmanaged.passUnretained(probe).retain()
  let withSecond = bits()
  second.release()
  guard !isPristine(withSecond), isPristine(bits()) else { return false }
  let unowned = UnownedBox(probe)
  let withUnowned = bits()
  withExtendedLifetime(unowned) {}
  guard !isPristine(withUnowned) else { return false }
  // A weak reference adds a side table that stays after the reference goes; checked
  // last, since the probe is then never pristine again.
  let weak = WeakBox(probe)
  let withWeak = bits()
  withExtendedLifetime(weak) {}
  return !isPristine(withWeak)
}()
