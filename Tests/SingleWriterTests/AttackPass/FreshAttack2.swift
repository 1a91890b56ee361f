import Foundation
import Testing

@testable import SingleWriter

// Fresh attack pass 2: "Serving is bounded" against tasks. A task's entry is never chosen
// to take over serving, so while tasks keep calling `await write`, the thread that ended
// the checkout serves them for as long as they keep coming.

/// `fa2Tasks` tasks loop on `await write` (bodies that sleep 200 µs) until `stop` is set or `seconds` have
/// passed; returns once they have all ended.
let fa2Tasks = 16

func fa2TaskStream(
  _ a: ThreadSafeSingleWriter<Int>, seconds: Double, stop: SharedFlag, started: Counter
) -> DispatchSemaphore {
  let ended = DispatchSemaphore(value: 0)
  let end = attackNow() + UInt64(seconds * 1e9)
  for _ in 0..<fa2Tasks {
    Task.detached {
      started.add(1)
      while !stop.isSet, attackNow() < end {
        await a.write { value in
          usleep(200)
          value += 1
        }
      }
      ended.signal()
    }
  }
  return ended
}

@Suite(.serialized) struct AttackPassFresh2 {
  /// A thread releases a proxy while 16 tasks keep calling `await write`: its release
  /// serves their bodies, and must return after about a millisecond, not when the tasks
  /// stop (after 3 s).
  @Test func aReleaseIsNotKeptServingTasksThatKeepWriting() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a release behind a stream of await writes")
      let a = ThreadSafeSingleWriter(value: 0)
      let took = Locked<UInt64>(0)
      let stop = SharedFlag()
      let started = Counter()
      coaOnThread {
        var held = a.writer
        let ended = fa2TaskStream(a, seconds: 3, stop: stop, started: started)
        coaAwait(5, "the tasks never queued") { a.queuedWrites >= 2 }
        let start = attackNow()
        held = nil  // this thread serves the queued bodies
        _ = held
        took.withLock { $0 = attackNow() - start }
        stop.set()
        for _ in 0..<fa2Tasks { ended.wait() }
      }
      let ms = took.withLock { $0 } / 1_000_000
      attackErr("the release took \(ms) ms; value \(a.read)\n")
      atkEnd(
        breakingIf: ms >= 500,
        "a release served other tasks' await writes for \(ms) ms, until they stopped")
    }
    expectNoBreak(result)
  }

  /// The same for a `withWriter` whose end finds tasks queued: the call itself does not
  /// return until the tasks stop.
  @Test func aWithWriterIsNotKeptServingTasksThatKeepWriting() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(30, "a withWriter behind a stream of await writes")
      let a = ThreadSafeSingleWriter(value: 0)
      let took = Locked<UInt64>(0)
      let stop = SharedFlag()
      let started = Counter()
      coaOnThread {
        var ended: DispatchSemaphore?
        let start = Locked<UInt64>(0)
        a.withWriter { value in
          ended = fa2TaskStream(a, seconds: 3, stop: stop, started: started)
          coaAwait(5, "the tasks never queued") { a.queuedWrites >= 2 }
          value += 1
          start.withLock { $0 = attackNow() }
        }
        took.withLock { $0 = attackNow() - start.withLock { $0 } }
        stop.set()
        for _ in 0..<fa2Tasks { ended!.wait() }
      }
      let ms = took.withLock { $0 } / 1_000_000
      attackErr("the withWriter's end took \(ms) ms; value \(a.read)\n")
      atkEnd(
        breakingIf: ms >= 500,
        "a withWriter's end served other tasks' await writes for \(ms) ms, until they stopped")
    }
    expectNoBreak(result)
  }
}
