import SingleWriter
import Testing

struct User: Equatable {
  var name: String
  var id: Int
}

@Suite struct SingleWriterTests {
  @Test func seedWalkthrough() {
    let currentUser = SingleWriter(value: User(name: "Default", id: 0))
    #expect(currentUser.read.name == "Default")

    var writerReference = currentUser.writer
    #expect(writerReference != nil)
    writerReference?.write.name = "Joe"

    #expect(currentUser.writer == nil)
    currentUser.writer?.write.name = "Sally"
    #expect(currentUser.read.name == "Joe")

    currentUser.writeNext { $0.write.name = "Bobo" }
    #expect(currentUser.read.name == "Joe")

    writerReference = nil
    #expect(currentUser.read.name == "Bobo")

    currentUser.writer?.write.name = "Sally"
    currentUser.writer?.write.id = 10
    #expect(currentUser.read == User(name: "Sally", id: 10))
  }

  @Test func writerIsNilWhileAProxyIsAlive() {
    let box = SingleWriter(value: 0)
    let first = box.writer
    #expect(first != nil)
    #expect(box.writer == nil)
    #expect(box.writer == nil)
    withExtendedLifetime(first) {}
  }

  @Test func readSeesWritesThroughAHeldProxy() {
    let box = SingleWriter(value: 1)
    let proxy = box.writer!
    proxy.write += 41
    #expect(box.read == 42)
    proxy.write = 7
    #expect(box.read == 7)
  }

  @Test func writeNextRunsAtOnceWhenFree() {
    let box = SingleWriter(value: [Int]())
    var ran = false
    box.writeNext { proxy in
      ran = true
      proxy.write.append(1)
    }
    #expect(ran)
    #expect(box.read == [1])
    #expect(box.writer != nil)
  }

  @Test func releaseRunsQueuedWritesInFIFOOrder() {
    let box = SingleWriter(value: [String]())
    var held = box.writer
    box.writeNext { $0.write.append("a") }
    box.writeNext { $0.write.append("b") }
    box.writeNext { $0.write.append("c") }
    #expect(box.read.isEmpty)
    held = nil
    #expect(box.read == ["a", "b", "c"])
    #expect(box.writer != nil, "the writer is free once the queue is drained")
    _ = held
  }

  @Test func insideAWriteTheWriterIsOutAndReadSeesTheWrite() {
    let box = SingleWriter(value: 0)
    var checks: [Bool] = []
    box.writeNext { proxy in
      proxy.write = 5
      checks.append(box.writer == nil)
      checks.append(box.read == 5)
      checks.append(box.tryWrite { $0 = 99 } == nil)
    }
    #expect(checks == [true, true, true])
    #expect(box.read == 5)
  }

  @Test func aQueuedWriteThatKeepsItsProxyHoldsBackTheRest() {
    let box = SingleWriter(value: [String]())
    var held = box.writer
    var kept: WriterProxy<[String]>?
    box.writeNext { proxy in
      proxy.write.append("keeper")
      kept = proxy
    }
    box.writeNext { $0.write.append("after") }
    held = nil
    #expect(box.read == ["keeper"])
    #expect(box.writer == nil, "the kept proxy still holds the checkout")
    kept?.write.append("more")
    #expect(box.read == ["keeper", "more"])
    kept = nil
    #expect(box.read == ["keeper", "more", "after"])
    #expect(box.writer != nil)
    _ = held
  }

  @Test func writeNextKeepingItsProxyWhenFree() {
    let box = SingleWriter(value: 0)
    var kept: WriterProxy<Int>?
    box.writeNext { kept = $0 }
    #expect(box.writer == nil)
    box.writeNext { $0.write += 10 }
    kept!.write = 1
    #expect(box.read == 1)
    kept = nil
    #expect(box.read == 11)
  }

  /// Release builds once freed `held` as soon as the access had loaded the value's
  /// address, so its release ran the queued write before the append was stored, and the
  /// append then overwrote it.
  @Test func aWriteThroughAHeldProxyFinishesBeforeItsReleaseRunsTheQueue() {
    for count in [0, 1, 7] {
      let box = SingleWriter(value: [Int](repeating: -1, count: count))
      var held = box.writer
      box.writeNext { $0.write.append(1) }
      held?.write.append(0)
      held = nil
      #expect(box.read.suffix(2) == [0, 1])
      _ = held
    }
  }

  @Test func nestedWriteNextGoesToTheBackOfTheQueue() {
    let box = SingleWriter(value: [String]())
    var held = box.writer
    box.writeNext { proxy in
      proxy.write.append("a")
      box.writeNext { $0.write.append("a.1") }
      box.writeNext { proxy in
        proxy.write.append("a.2")
        box.writeNext { $0.write.append("a.2.1") }
      }
    }
    box.writeNext { $0.write.append("b") }
    held = nil
    #expect(box.read == ["a", "b", "a.1", "a.2", "a.2.1"])
    _ = held
  }

  @Test func writeNextFromAFreeWriteRunsRightAfterIt() {
    let box = SingleWriter(value: [String]())
    box.writeNext { proxy in
      proxy.write.append("outer")
      box.writeNext { $0.write.append("inner") }
      proxy.write.append("outer again")
    }
    #expect(box.read == ["outer", "outer again", "inner"])
  }

  @Test func tryWriteMutatesInPlaceAndReturnsTheResult() {
    let box = SingleWriter(value: 1)
    let result = box.tryWrite { value -> String in
      value *= 3
      return "tripled"
    }
    #expect(result == "tripled")
    #expect(box.read == 3)
  }

  @Test func tryWriteReturnsNilWhileCheckedOut() {
    let box = SingleWriter(value: 1)
    var held = box.writer
    #expect(box.tryWrite { $0 = 2 } == nil)
    #expect(box.read == 1)
    held = nil
    #expect(box.tryWrite { $0 = 2 } != nil)
    #expect(box.read == 2)
    _ = held
  }

  @Test func tryWriteEndsTheCheckoutWhenTheBodyThrows() {
    struct Failure: Error {}
    let box = SingleWriter(value: 1)
    #expect(throws: Failure.self) {
      try box.tryWrite { value in
        value = 2
        throw Failure()
      }
    }
    #expect(box.read == 2)
    #expect(box.writer != nil)
  }

  @Test func writesQueuedInsideTryWriteRunWhenItEnds() {
    let box = SingleWriter(value: [Int]())
    _ = box.tryWrite { value in
      value.append(1)
      box.writeNext { $0.write.append(3) }
      value.append(2)
    }
    #expect(box.read == [1, 2, 3])
  }

  @Test func oneMillionQueuedWritesDrainInOrderWithoutRecursion() {
    let count = 1_000_000
    let box = SingleWriter(value: [Int]())
    _ = box.tryWrite { $0.reserveCapacity(count) }
    var held = box.writer
    for index in 0..<count {
      box.writeNext { $0.write.append(index) }
    }
    #expect(box.read.isEmpty)
    held = nil
    let result = box.read
    #expect(result.count == count)
    #expect(result.elementsEqual(0..<count))
    _ = held
  }

  @Test func aDeepQueueDrainsOnASmallStack() async {
    // 64 KiB of stack could not hold even a few thousand nested frames.
    let drained = await runOnThread(stackSize: 64 << 10) {
      let box = SingleWriter(value: 0)
      var held = box.writer
      for _ in 0..<200_000 { box.writeNext { $0.write += 1 } }
      held = nil
      _ = held
      return box.read
    }
    #expect(drained == 200_000)
  }

  @Test func containerAndProxiesAreFreedWhenNobodyHoldsThem() {
    weak var weakBox: SingleWriter<Int>?
    weak var weakProxy: WriterProxy<Int>?
    do {
      let box = SingleWriter(value: 0)
      weakBox = box
      box.writeNext { $0.write += 1 }  // leaves a spare proxy behind
      var held = box.writer
      weakProxy = held
      box.writeNext { $0.write += 1 }
      held = nil
      #expect(weakProxy == nil)
      #expect(box.read == 2)
      _ = held
    }
    #expect(weakBox == nil)
  }

  @Test func pendingClosuresAreReleasedAfterTheyRun() {
    final class Token {}
    weak var weakToken: Token?
    let box = SingleWriter(value: 0)
    var held = box.writer
    do {
      let token = Token()
      weakToken = token
      box.writeNext { proxy in
        withExtendedLifetime(token) { proxy.write += 1 }
      }
    }
    #expect(weakToken != nil)
    held = nil
    #expect(weakToken == nil)
    _ = held
  }

  // MARK: Proxies that outlive their closure

  @Test func aWeakReferenceToALentProxyIsNeverTheNextClosuresProxy() {
    final class Box { weak var proxy: WriterProxy<Int>? }
    let box = Box()
    let state = SingleWriter(value: 0)
    state.writeNext { box.proxy = $0 }
    #expect(box.proxy == nil, "the retired proxy was freed, so the weak reference is nil")
    var lent: [ObjectIdentifier] = []
    state.writeNext { proxy in
      lent.append(ObjectIdentifier(proxy))
      #expect(box.proxy == nil)
    }
    state.writeNext { lent.append(ObjectIdentifier($0)) }
    #expect(lent[0] == lent[1], "a proxy nobody kept is reused")
  }

  @Test func aStrongReferenceTakenInsideTheClosureOwnsTheCheckout() {
    let state = SingleWriter(value: 0)
    var kept: WriterProxy<Int>?
    state.writeNext { kept = $0 }
    #expect(state.writer == nil, "the kept proxy still holds the checkout")
    state.writeNext { $0.write += 1 }
    #expect(state.read == 0)
    kept?.write = 10
    kept = nil
    #expect(state.read == 11)
  }

  @Test func anUnownedReferenceToALentProxyTrapsWhenUsedLater() async {
    await #expect(processExitsWith: .failure) {
      final class Box { unowned(safe) var proxy: WriterProxy<Int>? }
      let box = Box()
      let state = SingleWriter(value: 0)
      state.writeNext { box.proxy = $0 }
      let held = state.writer
      box.proxy?.write = 99  // must not land inside `held`'s checkout
      _ = held
    }
  }

  @Test func anIdleProxyReachedThroughUnmanagedStopsWithTheStaleMessage() async {
    await #expect(processExitsWith: .failure) {
      let state = SingleWriter(value: 0)
      var escaped: Unmanaged<WriterProxy<Int>>?
      state.writeNext { escaped = Unmanaged.passUnretained($0) }
      // The spare is idle and still alive (the container keeps it).
      escaped!.takeUnretainedValue().write = 1
    }
  }

  // MARK: Draining never recurses

  @Test func queuedWritesThatKeepTheirProxiesDrainWithoutRecursion() async {
    final class Holder { var proxy: WriterProxy<Int>? }
    let drained = await runOnThread(stackSize: 64 << 10) {
      let state = SingleWriter(value: 0)
      var held = state.writer
      for _ in 0..<100_000 {
        let holder = Holder()
        state.writeNext { proxy in
          proxy.write += 1
          holder.proxy = proxy  // freed with the closure, ending the checkout in `deinit`
        }
      }
      held = nil
      _ = held
      return state.read
    }
    #expect(drained == 100_000)
  }
}
