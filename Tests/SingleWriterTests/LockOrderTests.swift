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

  /// A key whose hashing writes a container: a lock taken inside a `BarrierStore` write.
  private struct HookedKey: Hashable, Sendable {
    let id: Int
    let hook: @Sendable () -> Void

    static func == (lhs: HookedKey, rhs: HookedKey) -> Bool { lhs.id == rhs.id }

    func hash(into hasher: inout Hasher) {
      hook()
      hasher.combine(id)
    }
  }

  // Nested in `RaceDetectorTests`, which is serialized: these tests swap the global
  // `RaceDetector.onRace` handler, as that suite's tests do.
  extension RaceDetectorTests {
    @Suite(.serialized) struct LockOrderTests {
      @Test func twoMutexesTakenInBothOrdersOnTwoThreadsAreReportedOnce() {
        let a = ReentrantMutex()
        let b = ReentrantMutex()
        var aThenB: UInt = 0
        var bThenA: UInt = 0
        let reports = collectLockReports(naming: [a, b]) {
          aThenB = #line + 2
          onAnotherThread {
            a.with {
              b.with {}
            }
          }
          bThenA = #line + 3
          for _ in 0..<2 {  // the second time is the same pair: not reported again
            onAnotherThread {
              b.with {
                a.with {}
              }
            }
          }
        }
        #expect(reports.count == 1)
        guard let report = reports.first else { return }
        expectInversion(
          report, first: a, second: b, earlier: (aThenB, aThenB + 1), now: (bThenA, bThenA + 1))
        #expect(report.lockOrder?.taken.thread.contains("thread 0x") == true)
      }

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

      @Test func aContainerWriteAndABarrierStoreWriteInBothOrdersAreReported() {
        let box = ThreadSafeSingleWriter(value: 0)
        let store = BarrierStore<HookedKey, Int>()
        var boxThenStore: UInt = 0
        var storeThenBox: UInt = 0
        let reports = collectLockReports(naming: [box, store]) {
          boxThenStore = #line + 2
          onAnotherThread {
            box.withWriter { _ in
              store.setValue(1, forKey: HookedKey(id: 1) {})
            }
          }
          storeThenBox = #line + 3
          onAnotherThread {
            // The key's hashing runs inside the store's write, and writes the container.
            store.setValue(2, forKey: HookedKey(id: 2) { box.withWriter { $0 += 1 } })
          }
        }
        #expect(reports.count == 1)
        guard let report = reports.first else { return }
        // Taken now: the store (at the setValue) then the container (in the hook, whose
        // closure is on the same line).
        expectInversion(
          report, first: box, second: store, earlier: (boxThenStore, boxThenStore + 1),
          now: (storeThenBox, storeThenBox))
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

      @Test func reentrantReacquisitionIsNoOrder() {
        let a = ReentrantMutex()
        let b = ReentrantMutex()
        let reports = collectLockReports(naming: [a, b]) {
          onAnotherThread { a.with { a.with {} } }
          // The inner `a.with` is nested in the outer one, not taken after `b`.
          onAnotherThread { a.with { b.with { a.with {} } } }
        }
        #expect(reports.isEmpty)
      }

      /// The sharp edge of issue 28: the thread that ends a checkout runs the writes queued
      /// behind it, inside the locks it holds.
      @Test(arguments: ["writeNext", "withWriter", "proxy"])
      func aServedWriteTakingALockItsServerHoldsIsReported(endedBy ending: String) {
        let mutex = ReentrantMutex()
        let box = ThreadSafeSingleWriter(value: 0)
        let queue = DispatchSemaphore(value: 0)
        let queued = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let heldLine: UInt = #line + 4
        var takenLine: UInt = 0
        let reports = collectLockReports(naming: [mutex]) {
          let server = Thread {
            mutex.with {
              // While this thread holds the writer, the other one queues a write.
              let letItQueue: @Sendable () -> Void = {
                queue.signal()
                queued.wait()
              }
              switch ending {
              case "writeNext": box.writeNext { _ in letItQueue() }
              case "withWriter": box.withWriter { _ in letItQueue() }
              default:
                let proxy = box.writer!
                letItQueue()
                withExtendedLifetime(proxy) {}
              }
              // The checkout has ended here, and this thread ran the queued write.
            }
            finished.signal()
          }
          server.start()
          queue.wait()
          takenLine = #line + 1
          box.writeNext { proxy in mutex.with { proxy.write += 1 } }
          queued.signal()
          finished.wait()
        }
        #expect(reports.count == 1)
        guard let report = reports.first else { return }
        #expect(report.kind == .servedWriteTakesHeldLock)
        #expect(report.resource == lockName(mutex))
        #expect(report.lockOrder?.held.line == heldLine)
        #expect(report.lockOrder?.taken.line == takenLine)
        #expect(report.lockOrder?.taken.file == thisFile)
        #expect(report.description.contains(lockName(box)))
        #expect(box.read == 1)
      }

      @Test func turnedOffItReportsNothing() {
        let a = ReentrantMutex()
        let b = ReentrantMutex()
        RaceDetector.checksLockOrder = false
        let reports = collectLockReports(naming: [a, b]) {
          onAnotherThread { a.with { b.with {} } }
          onAnotherThread { b.with { a.with {} } }
        }
        RaceDetector.checksLockOrder = true
        #expect(reports.isEmpty)
        #expect(RaceDetector.checksLockOrder)
      }

      /// The debug cost of the check, by hand: `SINGLEWRITER_LOCKDEP_COST=1000000` prints
      /// nanoseconds per acquisition with the check on and off (see RaceDetector's docs).
      /// `SINGLEWRITER_LOCKDEP_CASE` picks one case, for instruction counts under callgrind.
      @Test(.enabled(if: ProcessInfo.processInfo.environment["SINGLEWRITER_LOCKDEP_COST"] != nil))
      func costPerAcquisition() {
        let environment = ProcessInfo.processInfo.environment
        let count = Int(environment["SINGLEWRITER_LOCKDEP_COST"] ?? "") ?? 1_000_000
        let box = ThreadSafeSingleWriter(value: 0)
        let mutex = ReentrantMutex()
        let outer = ReentrantMutex()
        let cases: [(String, () -> Void)] = [
          ("withWriter", { box.withWriter { $0 += 1 } }),
          ("tryWrite", { _ = box.tryWrite { $0 += 1 } }),
          ("mutex", { mutex.with {} }),
          // Two acquisitions, and an edge from the outer one to the container.
          ("nested", { outer.with { box.withWriter { $0 += 1 } } }),
        ]
        let clock = ContinuousClock()
        var lines: [String] = []
        for (name, body) in cases
        where environment["SINGLEWRITER_LOCKDEP_CASE"].map({ $0 == name }) ?? true {
          var perCall: [Bool: Double] = [:]
          for on in [false, true, false, true] {
            RaceDetector.checksLockOrder = on
            let elapsed = clock.measure { for _ in 0..<count { body() } }
            let ns =
              Double(elapsed.components.attoseconds) / 1e9
              + Double(elapsed.components.seconds) * 1e9
            perCall[on] = min(perCall[on] ?? .infinity, ns / Double(count))
          }
          let (off, on) = (perCall[false]!, perCall[true]!)
          lines.append(
            "\(name): \(Int(off)) ns off, \(Int(on)) ns on, +\(Int(on - off)) ns per call")
        }
        RaceDetector.checksLockOrder = true
        print(
          "lock-order checking, debug build, \(count) calls each:\n" + lines.joined(separator: "\n")
        )
      }

      @Test func theDefaultHandlerPrintsTheReportAndStops() async throws {
        let result = try await #require(
          processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
          let a = ReentrantMutex()
          let b = ReentrantMutex()
          a.with { b.with {} }
          b.with { a.with {} }
        }
        let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(standardError.contains("Potential deadlock between ReentrantMutex"))
      }
    }
  }
#endif
