import Foundation
import Testing

@testable import SingleWriter

// Promise "No write inside a read": the per-thread stack of read marks (sw_reading_push/pop).

@Suite struct AttackPassReadMarks {
  /// Found by the attack pass: the promise says "at any depth of nested reads", but the mark stack
  /// names only 8 containers. A write to the container of the ninth nested read, inside
  /// that read, waits forever for its own read instead of stopping with the message.
  /// Failed every run before its fix (debug and release): hangs until the watchdog (exit 3).
  @Test func aWriteInsideTheNinthNestedReadOfItsOwnContainerStops() async {
    let result = await #expect(
      processExitsWith: atkExpect(.failure), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "withWriter inside the 9th nested read of its own container")
      let boxes = (0..<9).map { _ in ThreadSafeSingleWriter(value: 0) }
      atkReadNested(boxes) { boxes[8].withWriter { $0 += 1 } }
    }
    expectStop(result, saying: readMessage)
  }

  /// Same at depth 12 with tryWrite, which must stop whether or not the writer is free.
  /// Failed every run before its fix (debug and release): hangs until the watchdog (exit 3).
  @Test func tryWriteInsideTheTwelfthNestedReadOfItsOwnContainerStops() async {
    let result = await #expect(
      processExitsWith: atkExpect(.failure), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "tryWrite inside the 12th nested read")
      let boxes = (0..<12).map { _ in ThreadSafeSingleWriter(value: 0) }
      atkReadNested(boxes) { _ = boxes[11].tryWrite { $0 += 1 } }
    }
    expectStop(result, saying: readMessage)
  }

  /// A read body that throws pops its mark: a write after it, inside an outer read of
  /// another container, runs (no false stop); and deep nesting past 8 then unwinding
  /// leaves no stale mark.
  @Test func throwingAndDeepReadsLeaveNoStaleMark() async {
    await #expect(processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]) {
      attackWatchdog(5, "stale read marks")
      struct Boom: Error {}
      let a = ThreadSafeSingleWriter(value: 0)
      let b = ThreadSafeSingleWriter(value: 0)
      b.read { _ in
        for _ in 0..<100 {
          do { try a.read { _ throws(Boom) in throw Boom() } } catch {}
        }
        a.withWriter { $0 += 1 }
      }
      let boxes = (0..<20).map { _ in ThreadSafeSingleWriter(value: 0) }
      func nest(_ index: Int) throws {
        if index == boxes.count { throw Boom() }
        try boxes[index].read { _ in try nest(index + 1) }
      }
      for _ in 0..<50 { try? nest(0) }
      for box in boxes { box.withWriter { $0 += 1 } }
      // Nested 10 deep, then back to depth 2: the two outer marks must still be named.
      atkReadNested(boxes[0..<2]) {
        atkReadNested(boxes[2..<12]) {}
        for index in 2..<20 { boxes[index].withWriter { $0 += 1 } }
      }
      a.withWriter { $0 += 1 }
      exit(a.read { $0 } == 2 ? 0 : 1)
    }
  }

  /// After two outer reads and 10 nested ones unwound to depth 2, a write to the outermost
  /// container must still stop.
  @Test func afterUnwindingPastEightTheOuterMarksStillStop() async {
    let result = await #expect(
      processExitsWith: atkExpect(.failure), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "outer mark after deep nesting")
      let boxes = (0..<12).map { _ in ThreadSafeSingleWriter(value: 0) }
      atkReadNested(boxes[0..<2]) {
        atkReadNested(boxes[2..<12]) {}
        boxes[0].withWriter { $0 += 1 }
      }
    }
    expectStop(result, saying: readMessage)
  }

  /// A read { } inside a writeNext body that another thread serves leaves no mark on the
  /// serving thread: that thread then writes the read container freely.
  @Test func aReadInsideABodyServedOnAnotherThreadLeavesNoMarkThere() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(5, "read in a served body")
      let a = ThreadSafeSingleWriter(value: 0)
      let c = ThreadSafeSingleWriter(value: 0)
      for _ in 0..<200 {
        let held = Locked(a.writer)
        writeNextFromAnotherThread(a) { proxy in c.read { _ in proxy.write += 1 } }
        held.withLock { $0 = nil }  // this thread serves the body, which reads c here
        c.withWriter { $0 += 1 }
        _ = c.tryWrite { $0 += 1 }
      }
      exit(a.read { $0 } == 200 && c.read { $0 } == 400 ? 0 : 1)
    }
    #expect(!standardError(result).contains("read { }"), "\(exitReport(result))")
  }

  /// A writeNext inside `a.read { }` while `a` is busy is allowed: it would not run at
  /// once (a self-perpetuating chain of queued bodies keeps the queue from ever emptying,
  /// so the writer is never free here). But when this thread is chosen to take over
  /// serving, it runs queued bodies inside its own read: a body's write then stops the
  /// program with "a write inside read", in a call the docs allow. The chain body prints
  /// "SERVED INSIDE READ" when it runs on the reading thread, as evidence.
  /// Failed intermittently before its fix: 4 of 6 runs alone (SIGILL, the read message, with the evidence
  /// line); passed in 3 full-suite runs and one release run. Reads for 3 s.
  @Test(.tags(.realTime), .unlessRealTimeSkipped)
  func aWriteNextInsideAReadChosenToServeDoesNotStop() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      // A watchdog, not a timing: alone it ends in 4 s, 6 under ThreadSanitizer; in the
      // parallel ThreadSanitizer suite, where every body it serves runs several times
      // slower and other tests keep both cores busy, it once passed 20 s.
      attackWatchdog(120, "writeNext inside a read, chosen to serve")
      let a = ThreadSafeSingleWriter(value: 0)
      let stop = Locked(false)
      let reader = Locked<UInt>(0)
      let inRead = Locked(false)
      @Sendable func chainBody(_ proxy: ThreadSafeWriterProxy<Int>) {
        if atkThreadID() == reader.withLock({ $0 }), inRead.withLock({ $0 }) {
          attackErr("SERVED INSIDE READ: the reading thread runs queued bodies\n")
        }
        attackSpin(30_000)
        if !stop.withLock({ $0 }) { a.writeNext(chainBody) }  // queued before this one ends
        proxy.write += 1
      }
      // H holds the writer while F queues a long first body and then the chain head, so
      // that H owes only the first body and serves the chain on borrowed time.
      let held = Locked(a.writer)
      let queued = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        a.writeNext { proxy in
          attackSpin(2_000_000)
          proxy.write += 1
        }
        queued.signal()
        attackSpin(500_000)
        a.writeNext(chainBody)
        queued.signal()
      }
      queued.wait()
      Thread.detachNewThread {
        held.withLock { $0 = nil }  // this thread serves: the first body, then the chain
      }
      queued.wait()
      reader.withLock { $0 = atkThreadID() }
      let end = attackNow() + 3_000_000_000
      var calls = 0
      while attackNow() < end {
        a.read { _ in
          inRead.withLock { $0 = true }
          a.writeNext { proxy in proxy.write += 1 }
          inRead.withLock { $0 = false }
          calls += 1
        }
        attackSpin(20_000)
      }
      stop.withLock { $0 = true }
      a.withWriter { $0 += 0 }
      attackErr("writeNexts inside reads: \(calls)\n")
      exit(0)
    }
    #expect(!standardError(result).contains("read { }"), "\(exitReport(result))")
  }
}

/// Reads `boxes` nested, each inside the `read { }` of the one before, and runs
/// `innermost` inside the last.
func atkReadNested(_ boxes: ArraySlice<ThreadSafeSingleWriter<Int>>, _ innermost: () -> Void) {
  guard let first = boxes.first else { return innermost() }
  first.read { _ in atkReadNested(boxes.dropFirst(), innermost) }
}

func atkReadNested(_ boxes: [ThreadSafeSingleWriter<Int>], _ innermost: () -> Void) {
  atkReadNested(boxes[...], innermost)
}
