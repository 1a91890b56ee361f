import SingleWriter
import Testing

/// A copy-on-write value that counts the copies it makes.
// Sendable: each test uses its value on one thread; the thread-safe container's proxies
// need `Sendable` values.
struct CopyCounted: @unchecked Sendable {
  final class Storage {
    var items: [Int]
    init(_ items: [Int]) { self.items = items }
  }
  var storage = Storage([])
  var copies = 0

  mutating func append(_ item: Int) {
    if !isKnownUniquelyReferenced(&storage) {
      storage = Storage(storage.items)
      copies += 1
    }
    storage.items.append(item)
  }
}

@Suite struct WriterProxyTests {
  @Test func writesThroughAProxyDoNotCopyTheValue() {
    let box = SingleWriter(value: CopyCounted())
    let proxy = box.writer!
    for item in 0..<1_000 { proxy.write.append(item) }
    #expect(proxy.write.copies == 0)
    #expect(box.read.storage.items.count == 1_000)
  }

  @Test func queuedAndClosureWritesDoNotCopyTheValue() {
    let box = SingleWriter(value: CopyCounted())
    var held = box.writer
    for item in 0..<100 { box.writeNext { $0.write.append(item) } }
    held = nil
    box.writeNext { $0.write.append(100) }
    _ = box.tryWrite { $0.append(101) }
    #expect(box.read.copies == 0)
    #expect(box.read.storage.items == Array(0...101))
    _ = held
  }

  @Test func appendingThroughAHeldWriterKeepsTheSameBuffer() {
    let box = SingleWriter(value: [Int]())
    let proxy = box.writer!
    proxy.write.reserveCapacity(100_000)
    let before = proxy.write.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    for item in 0..<100_000 { proxy.write.append(item) }
    let after = proxy.write.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    #expect(before == after, "the array was appended to in place, never copied")
    #expect(box.read.count == 100_000)
  }

  /// The form the docs show for holding a checkout up to a point: a proxy pinned with
  /// `withExtendedLifetime` keeps the checkout out, in release builds too, where ARC may
  /// otherwise release it right after its last use; once the pin ends, the queued write
  /// has run.
  @Test func aPinnedProxyHoldsTheCheckoutUpToThePin() {
    let plain = SingleWriter(value: 0)
    let shared = ThreadSafeSingleWriter(value: 0)
    if let held = plain.writer, let heldShared = shared.writer {
      held.write = 1
      heldShared.write = 1
      withExtendedLifetime((held, heldShared)) {
        #expect(plain.writer == nil)
        #expect(shared.writer == nil)
        plain.writeNext { $0.write = 2 }
        shared.writeNext { $0.write = 2 }
        #expect(plain.read == 1)
        #expect(shared.read == 1)
      }
    }
    #expect(plain.read == 2)
    #expect(shared.read == 2)
  }

  @Test func aProxyKeepsItsContainerAlive() {
    weak var weakBox: SingleWriter<[Int]>?
    var proxy: WriterProxy<[Int]>?
    do {
      let box = SingleWriter(value: [1])
      weakBox = box
      proxy = box.writer
      box.writeNext { $0.write.append(3) }
    }
    #expect(weakBox != nil)
    proxy!.write.append(2)
    #expect(weakBox?.read == [1, 2])
    proxy = nil
    #expect(weakBox == nil, "the queued write ran, then both were freed")
  }

  @Test func aProxyFromWriteNextCannotBeUsedAfterTheClosure() async {
    // A weak reference kept from the closure is `nil` afterwards: the proxy was retired.
    let box = SingleWriter(value: 0)
    weak var escaped: WriterProxy<Int>?
    box.writeNext { escaped = $0 }
    #expect(escaped == nil)
    // One reached without counting (Unmanaged) is the idle spare, and stops the program.
    await #expect(processExitsWith: .failure) {
      let box = SingleWriter(value: 0)
      var escaped: Unmanaged<WriterProxy<Int>>?
      box.writeNext { escaped = Unmanaged.passUnretained($0) }
      escaped!.takeUnretainedValue().write = 1
    }
  }
}
