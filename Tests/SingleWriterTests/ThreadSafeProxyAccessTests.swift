import Foundation
import Testing

@testable import SingleWriter

/// Promise "Nobody sees half an update", for writes through a held proxy: an access holds
/// the value in a word of its own and ends with a plain store (WriterLock+ProxyAccess.swift),
/// and readers meet it in a handshake across the two words. A value with references is
/// read under a reader slot, the side of the handshake that the optimistic copy of plain
/// values skips.
@Suite struct ThreadSafeProxyAccessTests {
  /// Two threads write through one proxy while two read: every read sees both fields of
  /// each write or neither, and no write is lost.
  @Test func readersNeverSeeHalfAnAccessThroughASharedProxy() async {
    let box = ThreadSafeSingleWriter(value: Halves())
    let proxy = box.writer!
    let writes = 20_000
    let torn = Counter()
    let writersLeft = Counter()
    writersLeft.add(2)
    await onThreads(4) { index in
      if index < 2 {
        for _ in 0..<writes { proxy.write.bumpBoth() }
        writersLeft.add(-1)
      } else {
        repeat {
          let seen = box.read
          if seen.first != seen.second { torn.add(1) }
        } while writersLeft.load() > 0
      }
    }
    #expect(torn.load() == 0)
    withExtendedLifetime(proxy) {
      #expect(box.read.first == 2 * writes && box.read.second == 2 * writes)
    }
  }

  /// A reader inside `read { }` holds its slot while the proxy's holder writes: the access
  /// steps back until the read ends, then runs, and the read saw the value from before.
  @Test func anAccessWaitsForAReaderThatHoldsItsSlot() async {
    let box = ThreadSafeSingleWriter(value: Halves())
    let proxy = box.writer!
    let reading = SharedFlag()
    let wrote = SharedFlag()
    let seenInside = Locked(Halves())
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        await runOnThread(stackSize: 1 << 20) {
          box.read { value in
            reading.set()
            // Stay inside the read until the writer has had every chance to get in.
            for _ in 0..<1_000 where !wrote.isSet { sched_yield() }
            seenInside.withLock { $0 = value }
          }
        }
      }
      group.addTask {
        await runOnThread(stackSize: 1 << 20) {
          while !reading.isSet { sched_yield() }
          proxy.write.bumpBoth()
          wrote.set()
        }
      }
    }
    #expect(seenInside.withLock { $0.first } == 0, "the access ran inside a read")
    withExtendedLifetime(proxy) { #expect(box.read.first == 1 && box.read.second == 1) }
  }
}

/// Two fields that every write sets together, and a string, so that the value has
/// references and is read under a reader slot.
private struct Halves: Sendable {
  var first = 0
  var second = 0
  var name = "halves"

  mutating func bumpBoth() {
    first += 1
    second += 1
  }
}
