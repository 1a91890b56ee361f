import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// An observed container's in-place `writeNext` bodies and proxies, with nothing queued,
/// end in one step and publish once each, as its closure writes do, never through the
/// serving path (the hand-off's lock, to serve an empty queue). Counted by the rows of
/// "How the hand-off works", which debug builds count: in a child process, so that other
/// tests' checkouts are not counted.
@Suite struct ObservedCheckoutEndTests {
  @Test func anObservedCheckoutWithNothingQueuedEndsWithoutServing() async {
    await #expect(processExitsWith: .success) {
      #if DEBUG
        sw_rows_set_counting(Int32(SW_ROWS_ALL))
      #endif
      let box = ThreadSafeSingleWriter(value: 0)
      let stream = box.changes()
      // Each checkout that wrote published: a look after each finds the version moved
      // on once.
      var moved = 0
      for round in 0..<200 {
        let before = box.publishedVersion
        if round < 100 { box.writeNext { $0.write += 1 } } else { box.writer!.write += 1 }
        if box.publishedVersion == before &+ 1 { moved += 1 }
      }
      precondition(box.read == 200)
      precondition(moved == 200, "\(moved) of 200 checkouts published")
      #if DEBUG
        let served = sw_rows_count(TransitionRow.handOffCheckoutEndedServe.rawValue)
        precondition(served == 0, "\(served) of 200 checkout ends went through serving")
      #endif
      withExtendedLifetime(stream) {}
    }
  }
}
