import Foundation
import SingleWriter
import Testing

#if DEBUG  // lock-order checks exist in debug builds only
  /// The name a lock-order report gives `lock`: its type and address.
  private func lockName(_ lock: AnyObject) -> String {
    "\(type(of: lock)) \(Unmanaged.passUnretained(lock).toOpaque())"
  }

  /// Collects the lock-order reports naming any of `locks` while `body` runs, and hands
  /// every other report to the handler installed before, so that a report from another
  /// suite is never taken for one of ours (and still stops the run if it is real).
  private func collectLockReports(
    naming locks: [AnyObject], during body: () throws -> Void
  ) rethrows -> [RaceReport] {
    let names = locks.map(lockName)
    let collected = Locked<[RaceReport]>([])
    let previous = RaceDetector.onRace
    RaceDetector.onRace = { report in
      if report.kind != .race, names.contains(where: report.resource.contains) {
        collected.withLock { $0.append(report) }
      } else {
        previous(report)
      }
    }
    defer { RaceDetector.onRace = previous }
    try body()
    return collected.withLock { $0 }
  }

  private func collectLockReports(
    naming locks: [AnyObject], during body: () async throws -> Void
  ) async rethrows -> [RaceReport] {
    let names = locks.map(lockName)
    let collected = Locked<[RaceReport]>([])
    let previous = RaceDetector.onRace
    RaceDetector.onRace = { report in
      if report.kind != .race, names.contains(where: report.resource.contains) {
        collected.withLock { $0.append(report) }
      } else {
        previous(report)
      }
    }
    defer { RaceDetector.onRace = previous }
    try await body()
    return collected.withLock { $0 }
  }

  /// Runs `body` on a thread of its own and waits for it to end: each order below is
  /// taken on another thread, at another time, so no deadlock can happen.
  private func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    Thread {
      body()
      done.signal()
    }.start()
    done.wait()
  }

  private let thisFile = "SingleWriterTests/LockOrderTests.swift"

  /// Checks that `report` is the inversion of `first` then `second` (taken earlier at
  /// `firstLines`) by `second` then `first` (taken now at `secondLines`).
  private func expectInversion(
    _ report: RaceReport, first: AnyObject, second: AnyObject,
    earlier firstLines: (UInt, UInt), now secondLines: (UInt, UInt),
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(report.kind == .lockOrderInversion, sourceLocation: sourceLocation)
    #expect(report.resource.contains(lockName(first)), sourceLocation: sourceLocation)
    #expect(report.resource.contains(lockName(second)), sourceLocation: sourceLocation)
    guard let now = report.lockOrder, let earlier = report.oppositeOrder else {
      Issue.record("a lock-order report without both orders", sourceLocation: sourceLocation)
      return
    }
    let sites = [earlier.held, earlier.taken, now.held, now.taken]
    #expect(sites.map(\.lock) == [first, second, second, first].map(lockName))
    #expect(
      sites.map(\.line) == [firstLines.0, firstLines.1, secondLines.0, secondLines.1],
      sourceLocation: sourceLocation)
    #expect(sites.allSatisfy { $0.file == thisFile }, sourceLocation: sourceLocation)
    #expect(report.inside.line == secondLines.0, sourceLocation: sourceLocation)
    #expect(report.entering.line == secondLines.1, sourceLocation: sourceLocation)
    for name in [lockName(first), lockName(second)] {
      #expect(report.description.contains(name), sourceLocation: sourceLocation)
    }
    #expect(report.description.contains("Potential deadlock"), sourceLocation: sourceLocation)
  }

  // Nested in `RaceDetectorTests`, which is serialized: these tests swap the global
  // `RaceDetector.onRace` handler, as that suite's tests do. The companions' locks are
  // checked in SingleWriterCompanionsTests' LockOrderTests.
  extension RaceDetectorTests {
    @Suite(.serialized) struct LockOrderTests {
      @Test func twoContainersWrittenInBothOrdersAreReported() {
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        var aThenB: UInt = 0
        var bThenA: UInt = 0
        let reports = collectLockReports(naming: [a, b]) {
          aThenB = #line + 2
          onAnotherThread {
            a.withWriter { _ in
              b.withWriter { $0 += 1 }
            }
          }
          bThenA = #line + 2
          onAnotherThread {
            b.withWriter { _ in
              a.withWriter { $0 += 1 }
            }
          }
        }
        #expect(reports.count == 1)
        guard let report = reports.first else { return }
        expectInversion(
          report, first: a, second: b, earlier: (aThenB, aThenB + 1), now: (bThenA, bThenA + 1))
        #expect(lockName(a).hasPrefix("ThreadSafeSingleWriter<Int> 0x"))
      }

      @Test func aTaskHoldingACheckoutTakesItsOrderWithIt() async throws {
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        var checkoutLine: UInt = 0
        var bThenA: UInt = 0
        let reports = try await collectLockReports(naming: [a, b]) {
          do {
            checkoutLine = #line + 1
            let proxy = try await a.checkout()
            b.withWriter { $0 += 1 }
            withExtendedLifetime(proxy) {}
          }  // released
          bThenA = #line + 2
          onAnotherThread {
            b.withWriter { _ in
              a.withWriter { $0 += 1 }
            }
          }
        }
        #expect(reports.count == 1)
        guard let report = reports.first else { return }
        expectInversion(
          report, first: a, second: b, earlier: (checkoutLine, checkoutLine + 1),
          now: (bThenA, bThenA + 1))
        #expect(report.oppositeOrder?.held.thread.hasPrefix("task 0x") == true)
      }

      @Test func aWriteNextInsideAnotherContainersWriteIsNoOrder() {
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        let reports = collectLockReports(naming: [a, b]) {
          // Run in place: the writer was free.
          onAnotherThread { a.withWriter { _ in b.writeNext { $0.write += 1 } } }
          onAnotherThread { b.withWriter { _ in a.writeNext { $0.write += 1 } } }
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
        }
        #expect(reports.isEmpty)
        #expect(a.read == 2 && b.read == 2)
      }

      @Test func tryWriteInsideAnotherWriteIsNoOrderToIt() {
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        let reports = collectLockReports(naming: [a, b]) {
          onAnotherThread { a.withWriter { _ in _ = b.tryWrite { $0 += 1 } } }
          onAnotherThread { b.withWriter { _ in _ = a.tryWrite { $0 += 1 } } }
          onAnotherThread { _ = a.tryWrite { _ in b.tryWrite { $0 += 1 } } }
          onAnotherThread { _ = b.tryWrite { _ in a.tryWrite { $0 += 1 } } }
        }
        #expect(reports.isEmpty)
        #expect(a.read == 2 && b.read == 2)
      }

      /// What `tryWrite` holds can block others, so a wait inside it is an order from it.
      @Test func aWaitInsideTryWriteIsAnOrderFromIt() {
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        let reports = collectLockReports(naming: [a, b]) {
          onAnotherThread { _ = a.tryWrite { _ in b.withWriter { $0 += 1 } } }
          onAnotherThread { _ = b.tryWrite { _ in a.withWriter { $0 += 1 } } }
        }
        #expect(reports.count == 1)
      }

      @Test func turnedOffItReportsNothing() {
        let a = ThreadSafeSingleWriter(value: 0)
        let b = ThreadSafeSingleWriter(value: 0)
        RaceDetector.checksLockOrder = false
        let reports = collectLockReports(naming: [a, b]) {
          onAnotherThread { a.withWriter { _ in b.withWriter { $0 += 1 } } }
          onAnotherThread { b.withWriter { _ in a.withWriter { $0 += 1 } } }
        }
        RaceDetector.checksLockOrder = true
        #expect(reports.isEmpty)
        #expect(RaceDetector.checksLockOrder)
      }

      @Test func theDefaultHandlerPrintsTheReportAndStops() async throws {
        let result = try await #require(
          processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
          let a = ThreadSafeSingleWriter(value: 0)
          let b = ThreadSafeSingleWriter(value: 0)
          a.withWriter { _ in b.withWriter { $0 += 1 } }
          b.withWriter { _ in a.withWriter { $0 += 1 } }
        }
        let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(standardError.contains("Potential deadlock between ThreadSafeSingleWriter<Int>"))
      }
    }
  }
#endif
