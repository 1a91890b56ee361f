import Foundation
import Testing

@testable import SingleWriter

// "Lock order reported": a `writeNext` that queues on a container made with
// `maxQueuedWrites` may wait for room, so inside another container's write it is an
// order, and its inversion is reported; on an unbounded container it is no order.

#if DEBUG
  @Suite(.serialized) struct AttackPassBoundedWriteNextLockOrder {
    @Test(arguments: [true, false])
    func aQueuedWriteNextInsideAnotherWriteIsAnOrderOnlyWhenBounded(bounded: Bool) {
      let a =
        bounded
        ? ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 100) : ThreadSafeSingleWriter(value: 0)
      let b =
        bounded
        ? ThreadSafeSingleWriter(value: 0, maxQueuedWrites: 100) : ThreadSafeSingleWriter(value: 0)
      let names = [a as AnyObject, b as AnyObject].map {
        "\(type(of: $0)) \(Unmanaged.passUnretained($0).toOpaque())"
      }
      let collected = Locked<[String]>([])
      let previous = RaceDetector.onRace
      RaceDetector.onRace = { report in
        if report.kind != .race, names.contains(where: report.resource.contains) {
          collected.withLock { $0.append("\(report)") }
        } else {
          previous(report)
        }
      }
      defer { RaceDetector.onRace = previous }
      func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
          body()
          done.signal()
        }.start()
        done.wait()
      }
      // Queued: the writer is checked out here, and the release runs the body.
      do {
        let held = b.writer!
        onAnotherThread { a.withWriter { _ in b.writeNext { $0.write += 1 } } }
        withExtendedLifetime(held) {}
      }
      do {
        let held = a.writer!
        onAnotherThread { b.withWriter { _ in a.writeNext { $0.write += 1 } } }
        withExtendedLifetime(held) {}
      }
      let reports = collected.withLock { $0 }
      #expect(
        reports.isEmpty != bounded, "\(reports.first.map { String($0.prefix(600)) } ?? "none")")
      #expect(a.read == 1 && b.read == 1)
    }
  }
#endif
