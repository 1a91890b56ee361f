import Dispatch
import Foundation
import SingleWriter
import SingleWriterCompanions
import Testing

// Promise "Lock order reported" for the companions' locks, alone and beside a container:
// the core checks them through its `package` hooks. Each test runs in a child process,
// because it swaps the global `RaceDetector.onRace` handler (or turns checking off), and
// SingleWriterTests' own lock-order tests do the same in the same process, serialized only
// among themselves.

#if DEBUG  // lock-order checks exist in debug builds only
  /// The name a lock-order report gives `lock`: its type and address.
  private func lockName(_ lock: AnyObject) -> String {
    "\(type(of: lock)) \(Unmanaged.passUnretained(lock).toOpaque())"
  }

  /// Collects the lock-order reports naming any of `locks` while `body` runs, and hands
  /// every other report to the handler installed before.
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

  private let thisFile = "SingleWriterCompanionsTests/LockOrderTests.swift"

  /// In a child: writes "FAIL" and what failed to standard error unless `condition`, for
  /// the parent to show (an exit test hands back an issue without its expression).
  private func check(
    _ condition: Bool, _ what: @autoclosure () -> String, line: UInt = #line
  ) {
    if !condition {
      FileHandle.standardError.write(Data("FAIL at line \(line): \(what())\n".utf8))
    }
  }

  /// In the parent: the child exited normally and wrote no "FAIL".
  private func expectNoFailure(
    _ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let text = standardError(result)
    #expect(result != nil && !text.contains("FAIL"), "\(text)", sourceLocation: sourceLocation)
  }

  /// Checks that `report` is the inversion of `first` then `second` (taken earlier at
  /// `firstLines`) by `second` then `first` (taken now at `secondLines`).
  private func checkInversion(
    _ report: RaceReport, first: AnyObject, second: AnyObject,
    earlier firstLines: (UInt, UInt), now secondLines: (UInt, UInt)
  ) {
    check(report.kind == .lockOrderInversion, "kind \(report.kind)")
    check(report.resource.contains(lockName(first)), "resource \(report.resource)")
    check(report.resource.contains(lockName(second)), "resource \(report.resource)")
    guard let now = report.lockOrder, let earlier = report.oppositeOrder else {
      check(false, "a lock-order report without both orders")
      return
    }
    let sites = [earlier.held, earlier.taken, now.held, now.taken]
    check(
      sites.map(\.lock) == [first, second, second, first].map(lockName),
      "locks \(sites.map(\.lock))")
    check(
      sites.map(\.line) == [firstLines.0, firstLines.1, secondLines.0, secondLines.1],
      "lines \(sites.map(\.line)), expected \([firstLines.0, firstLines.1, secondLines.0, secondLines.1])"
    )
    check(sites.allSatisfy { $0.file == thisFile }, "files \(sites.map(\.file))")
    check(report.inside.line == secondLines.0, "inside \(report.inside.line)")
    check(report.entering.line == secondLines.1, "entering \(report.entering.line)")
    for name in [lockName(first), lockName(second)] {
      check(report.description.contains(name), "description \(report.description)")
    }
    check(report.description.contains("Potential deadlock"), "description \(report.description)")
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

  // The scenarios, each run in a child by a test below. Out of the exit tests' bodies so
  // that the sites the locks record (`#fileID`, `#line`) are this file's lines, not those of
  // a macro's expansion.

  private func twoMutexesInBothOrders() {
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
    check(reports.count == 1, "\(reports.count) reports")
    guard let report = reports.first else { return }
    checkInversion(
      report, first: a, second: b, earlier: (aThenB, aThenB + 1), now: (bThenA, bThenA + 1))
    check(
      report.lockOrder?.taken.thread.contains("thread 0x") == true,
      "thread \(report.lockOrder?.taken.thread ?? "")")
    check(lockName(a).hasPrefix("ReentrantMutex 0x"), lockName(a))
  }

  private func aContainerAndABarrierStoreInBothOrders() {
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
    check(reports.count == 1, "\(reports.count) reports")
    guard let report = reports.first else { return }
    // Taken now: the store (at the setValue) then the container (in the hook, whose
    // closure is on the same line).
    checkInversion(
      report, first: box, second: store, earlier: (boxThenStore, boxThenStore + 1),
      now: (storeThenBox, storeThenBox))
  }

  private func aContainerAndAMutexInBothOrders() {
    let mutex = ReentrantMutex()
    let box = ThreadSafeSingleWriter(value: 0)
    var mutexThenBox: UInt = 0
    var boxThenMutex: UInt = 0
    let reports = collectLockReports(naming: [mutex, box]) {
      mutexThenBox = #line + 2
      onAnotherThread {
        mutex.with {
          box.withWriter { $0 += 1 }
        }
      }
      boxThenMutex = #line + 2
      onAnotherThread {
        box.withWriter { _ in
          mutex.with {}
        }
      }
    }
    check(reports.count == 1, "\(reports.count) reports")
    guard let report = reports.first else { return }
    checkInversion(
      report, first: mutex, second: box, earlier: (mutexThenBox, mutexThenBox + 1),
      now: (boxThenMutex, boxThenMutex + 1))
  }

  private func reentrantReacquisition() {
    let a = ReentrantMutex()
    let b = ReentrantMutex()
    let reports = collectLockReports(naming: [a, b]) {
      onAnotherThread { a.with { a.with {} } }
      // The inner `a.with` is nested in the outer one, not taken after `b`.
      onAnotherThread { a.with { b.with { a.with {} } } }
    }
    check(reports.isEmpty, "\(reports.count) reports")
  }

  private func aServedWriteTakesALockItsServerHolds(endedBy ending: String) {
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
    check(reports.count == 1, "\(reports.count) reports")
    guard let report = reports.first else { return }
    check(report.kind == .servedWriteTakesHeldLock, "kind \(report.kind)")
    check(report.resource == lockName(mutex), "resource \(report.resource)")
    check(report.lockOrder?.held.line == heldLine, "held \(String(describing: report.lockOrder))")
    check(
      report.lockOrder?.taken.line == takenLine, "taken \(String(describing: report.lockOrder))")
    check(report.lockOrder?.taken.file == thisFile, "file \(String(describing: report.lockOrder))")
    check(report.description.contains(lockName(box)), report.description)
    check(box.read == 1, "value \(box.read)")
  }

  private func turnedOff() {
    let a = ReentrantMutex()
    let b = ReentrantMutex()
    RaceDetector.checksLockOrder = false
    let reports = collectLockReports(naming: [a, b]) {
      onAnotherThread { a.with { b.with {} } }
      onAnotherThread { b.with { a.with {} } }
    }
    check(reports.isEmpty, "\(reports.count) reports")
  }

  @Suite struct LockOrderTests {
    @Test func twoMutexesTakenInBothOrdersOnTwoThreadsAreReportedOnce() async {
      let result = await #expect(
        processExitsWith: .success, observing: [\.standardErrorContent]
      ) { twoMutexesInBothOrders() }
      expectNoFailure(result)
    }

    @Test func aContainerWriteAndABarrierStoreWriteInBothOrdersAreReported() async {
      let result = await #expect(
        processExitsWith: .success, observing: [\.standardErrorContent]
      ) { aContainerAndABarrierStoreInBothOrders() }
      expectNoFailure(result)
    }

    @Test func aContainerWriteAndAMutexInBothOrdersAreReported() async {
      let result = await #expect(
        processExitsWith: .success, observing: [\.standardErrorContent]
      ) { aContainerAndAMutexInBothOrders() }
      expectNoFailure(result)
    }

    @Test func reentrantReacquisitionIsNoOrder() async {
      let result = await #expect(
        processExitsWith: .success, observing: [\.standardErrorContent]
      ) { reentrantReacquisition() }
      expectNoFailure(result)
    }

    /// The sharp edge of issue 28: the thread that ends a checkout runs the writes queued
    /// behind it, inside the locks it holds.
    @Test(arguments: ["writeNext", "withWriter", "proxy"])
    func aServedWriteTakingALockItsServerHoldsIsReported(endedBy ending: String) async {
      let result = await #expect(
        processExitsWith: .success, observing: [\.standardErrorContent]
      ) { [ending] in aServedWriteTakesALockItsServerHolds(endedBy: ending) }
      expectNoFailure(result)
    }

    @Test func turnedOffItReportsNothing() async {
      let result = await #expect(
        processExitsWith: .success, observing: [\.standardErrorContent]
      ) { turnedOff() }
      expectNoFailure(result)
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

    /// The debug cost of the check, by hand: `SINGLEWRITER_LOCKDEP_COST=1000000` prints
    /// nanoseconds per acquisition with the check on and off (see RaceDetector's docs).
    /// `SINGLEWRITER_LOCKDEP_CASE` picks one case, for instruction counts under callgrind.
    /// In this process: it reports nothing, and turns checking off only while it runs, by
    /// hand, with nothing else running.
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
  }
#endif
