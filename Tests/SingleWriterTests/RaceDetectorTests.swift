import Foundation
import SingleWriter
import Testing

/// Collects the race reports that `matches` picks from its creation to `stop()`, and hands
/// any other report to the handler installed before, so a stray report from another suite
/// is never mistaken for one of ours (and still stops the run if it is real).
final class ReportCollection: Sendable {
  private let collected = Locked<[RaceReport]>([])
  private let previous: @Sendable (RaceReport) -> Void

  init(where matches: @escaping @Sendable (RaceReport) -> Bool) {
    let previous = RaceDetector.onRace
    self.previous = previous
    RaceDetector.onRace = { [collected] report in
      if matches(report) { collected.withLock { $0.append(report) } } else { previous(report) }
    }
  }

  var reports: [RaceReport] { collected.withLock { $0 } }

  /// Puts the handler installed before back.
  func stop() { RaceDetector.onRace = previous }
}

/// The reports that `matches` picks while `body` runs.
private func collectReports(
  where matches: @escaping @Sendable (RaceReport) -> Bool, during body: () throws -> Void
) rethrows -> [RaceReport] {
  let collection = ReportCollection(where: matches)
  defer { collection.stop() }
  try body()
  return collection.reports
}

private func collectReports(
  where matches: @escaping @Sendable (RaceReport) -> Bool, during body: () async -> Void
) async -> [RaceReport] {
  let collection = ReportCollection(where: matches)
  defer { collection.stop() }
  await body()
  return collection.reports
}

/// An actor whose jobs run on one thread of its own, never on the pool that runs the
/// tests, so hopping onto it moves a task to another thread.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ExecutorJob
private actor OnItsOwnThread {
  static let executor = OwnThreadExecutor()

  nonisolated var unownedExecutor: UnownedSerialExecutor {
    Self.executor.asUnownedSerialExecutor()
  }

  func run<R: Sendable>(_ body: @Sendable () -> R) -> R { body() }

  /// A section opened and closed on this actor's thread, suspended in `pause` between:
  /// other jobs of this actor, on the same thread, run meanwhile.
  func holdSection(
    _ mode: AccessMode, _ resource: String, line: UInt = #line,
    across pause: @Sendable () async -> Void
  ) async {
    RaceDetector.begin(mode, resource, line: line)
    await pause()
    RaceDetector.end(mode, resource)
  }
}

/// A one-shot signal for tasks: `wait` returns once `open` has been called.
private struct Gate: Sendable {
  private let stream: AsyncStream<Void>
  private let continuation: AsyncStream<Void>.Continuation

  init() { (stream, continuation) = AsyncStream.makeStream() }

  func open() { continuation.finish() }
  func wait() async { for await _ in stream {} }
}

/// Passes a value that is not `Sendable` to another thread on purpose. The receiver
/// takes it out, so no reference is left to be released later on the wrong thread.
private final class Smuggled<Value>: @unchecked Sendable {
  // Sendable: only the tests' semaphores order the accesses; that is the point.
  private var value: Value?
  init(_ value: Value) { self.value = value }
  func take() -> Value { value.take()! }
}

/// The running thread's identity. Not `pthread_self()`, which is declared `const`:
/// the optimizer may merge two calls across an `await`.
private func currentThread() -> ObjectIdentifier { ObjectIdentifier(Thread.current) }

private func uniqueResource() -> String { "race-detector-tests \(UUID())" }

/// Opens a `first` section of `resource` on a worker thread, and while it is open,
/// opens and closes a `second` one on this thread. Semaphores, not timing, make the
/// two overlap. Returns the lines of the two `begin` calls.
private func overlap(
  _ first: AccessMode, _ second: AccessMode, on resource: String
) -> (first: UInt, second: UInt) {
  let inside = DispatchSemaphore(value: 0)
  let done = DispatchSemaphore(value: 0)
  let finished = DispatchSemaphore(value: 0)
  let firstLine: UInt = #line + 2
  Thread {
    RaceDetector.begin(first, resource)
    inside.signal()
    done.wait()
    RaceDetector.end(first, resource)
    finished.signal()
  }.start()
  inside.wait()
  let secondLine: UInt = #line + 1
  RaceDetector.begin(second, resource)
  RaceDetector.end(second, resource)
  done.signal()
  finished.wait()
  return (firstLine, secondLine)
}

/// Holds a checkout of `box` on this thread while `misuse` runs on another thread.
private func useFromAnotherThreadWhileCheckedOut<Value>(
  _ box: SingleWriter<Value>, _ misuse: @escaping (SingleWriter<Value>, WriterProxy<Value>) -> Void
) {
  let held = box.writer()!
  let cargo = Smuggled((box, held, misuse))
  let finished = DispatchSemaphore(value: 0)
  Thread {
    do {
      let (box, held, misuse) = cargo.take()
      misuse(box, held)
    }  // this thread's references go before the signal: `held` is released on ours
    finished.signal()
  }.start()
  finished.wait()
  withExtendedLifetime(held) {}
}

private struct Ledger {
  var entries: [Int] = []
}

private struct Quiet {
  var items: [Int] = []
}

// Serialized: these tests swap the process-wide `RaceDetector.onRace`.
@Suite(.serialized) struct RaceDetectorTests {
  #if DEBUG
    @Test(arguments: [(AccessMode.write, AccessMode.write), (.write, .read), (.read, .write)])
    func conflictingSectionsOnTwoThreadsAreReportedOnce(
      first: AccessMode, second: AccessMode
    ) throws {
      let resource = uniqueResource()
      var lines: (first: UInt, second: UInt) = (0, 0)
      let reports = collectReports(where: { $0.resource.contains(resource) }) {
        lines = overlap(first, second, on: resource)
      }
      try #require(reports.count == 1)
      let report = reports[0]
      #expect(report.resource == "\"\(resource)\"")
      #expect(report.inside.mode == first)
      #expect(report.inside.line == lines.first)
      #expect(report.inside.file == #fileID)
      #expect(report.inside.function == "overlap(_:_:on:)")
      #expect(report.inside.thread.hasPrefix("thread 0x"))
      #expect(report.entering.mode == second)
      #expect(report.entering.line == lines.second)
      #expect(report.entering.file == #fileID)
      #expect(report.entering.thread.hasPrefix("thread 0x"))
      #expect(report.entering.thread != report.inside.thread)
      #expect(report.description.contains("\(#fileID):\(lines.first)"))
      #expect(report.description.contains("\(#fileID):\(lines.second)"))
      #expect(!report.description.contains("\n"), "one paragraph")
      #if os(Linux) || canImport(Darwin)
        #expect(!report.callStack.isEmpty)
      #endif
    }
  #endif

  @Test func readersOnTwoThreadsDoNotConflict() {
    let resource = uniqueResource()
    let reports = collectReports(where: { $0.resource.contains(resource) }) {
      _ = overlap(.read, .read, on: resource)
    }
    #expect(reports.isEmpty)
  }

  @Test func aThreadDoesNotConflictWithItself() {
    let resource = uniqueResource()
    let reports = collectReports(where: { $0.resource.contains(resource) }) {
      RaceDetector.withAccess(.write, resource) {
        RaceDetector.withAccess(.read, resource) {}
        RaceDetector.withAccess(.write, resource) {
          RaceDetector.begin(.read, resource)
          RaceDetector.end(.read, resource)
        }
      }
      RaceDetector.withAccess(.read, resource) {
        RaceDetector.withAccess(.write, resource) {}
      }
    }
    #expect(reports.isEmpty)
  }

  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func aTaskDoesNotConflictWithItselfAfterMovingToAnotherThread() async throws {
    let resource = uniqueResource()
    let actor = OnItsOwnThread()
    var threads: (before: ObjectIdentifier, during: ObjectIdentifier)?
    let reports = await collectReports(where: { $0.resource.contains(resource) }) {
      RaceDetector.begin(.write, resource)
      let before = currentThread()
      let during = await actor.run {
        RaceDetector.withAccess(.read, resource) {}
        RaceDetector.withAccess(.write, resource) {}
        return currentThread()
      }
      // Back on the pool, perhaps on yet another thread: still this task's section.
      RaceDetector.end(.write, resource)
      threads = (before, during)
    }
    let (before, during) = try #require(threads)
    #expect(before != during, "the task did move to another thread")
    #expect(reports.isEmpty)
  }

  #if DEBUG
    /// Issue 22, item 7: a section that a task holds across an `await` belongs to that
    /// task, not to the thread it began on: another task on that thread overlaps it.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    @Test func aSectionHeldAcrossAnAwaitConflictsWithAnotherTaskOnItsThread() async throws {
      let resource = uniqueResource()
      let actor = OnItsOwnThread()
      let inside = Gate()
      let leave = Gate()
      let writeLine: UInt = #line + 4
      let readLine: UInt = #line + 9
      let reports = await collectReports(where: { $0.resource.contains(resource) }) {
        let holder = Task {
          await actor.holdSection(.write, resource) {
            inside.open()
            await leave.wait()
          }
        }
        await inside.wait()
        await actor.run { RaceDetector.withAccess(.read, resource) {} }  // the same thread
        leave.open()
        await holder.value
      }
      try #require(reports.count == 1)
      #expect(reports[0].inside.line == writeLine)
      #expect(reports[0].entering.line == readLine)
    }

    /// Issue 22, item 7: `end` closes the section of its own task, not another task's
    /// section that began on the thread this one resumed on.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    @Test func endClosesItsOwnTasksSection() async throws {
      let resource = uniqueResource()
      let actor = OnItsOwnThread()
      let inside = Gate()
      let leave = Gate()
      let collected = Locked<[RaceReport]>([])
      let previous = RaceDetector.onRace
      RaceDetector.onRace = { report in
        guard report.resource.contains(resource) else { return previous(report) }
        collected.withLock { $0.append(report) }
      }
      defer { RaceDetector.onRace = previous }
      RaceDetector.begin(.read, resource)  // this task's, on a pool thread
      let otherLine: UInt = #line + 3
      let other = Task {
        // Another task's, on the actor's thread.
        await actor.holdSection(.read, resource) {
          inside.open()
          await leave.wait()
        }
      }
      await inside.wait()
      await actor.run { RaceDetector.end(.read, resource) }  // this task, on that thread
      await runOnThread(stackSize: 1 << 20) {
        RaceDetector.withAccess(.write, resource) {}  // overlaps whatever is still open
      }
      let reports = collected.withLock { $0 }
      try #require(reports.count == 1)
      // Had `end` closed the other task's section, that task's own `end` would find
      // nothing to close and stop the program: it is left parked instead.
      try #require(reports[0].inside.line == otherLine, "the other task's section is open")
      leave.open()
      await other.value
    }
  #endif

  @Test func withAccessReturnsAndRethrows() {
    struct Failure: Error {}
    let resource = uniqueResource()
    #expect(RaceDetector.withAccess(.read, resource) { 42 } == 42)
    #expect(throws: Failure.self) {
      try RaceDetector.withAccess(.write, resource) { () throws -> Void in throw Failure() }
    }
    // The throw ended the section: another thread may now write.
    let reports = collectReports(where: { $0.resource.contains(resource) }) {
      _ = overlap(.read, .read, on: resource)
    }
    #expect(reports.isEmpty)
  }

  #if DEBUG
    @Test func theSectionEndsWhenTheBodyThrows() {
      struct Failure: Error {}
      let resource = uniqueResource()
      let reports = collectReports(where: { $0.resource.contains(resource) }) {
        _ = try? RaceDetector.withAccess(.write, resource) { () throws(Failure) -> Void in
          throw Failure()
        }
        _ = overlap(.write, .write, on: resource)
      }
      #expect(reports.count == 1, "only the overlap, not a section left open by the throw")
    }

    @Test func endingASectionThatWasNeverBegunStops() async {
      await #expect(processExitsWith: .failure) {
        RaceDetector.end(.write, "never begun")
      }
    }

    @Test func theDefaultHandlerPrintsTheReportAndStops() async throws {
      let result = try await #require(
        processExitsWith: .failure, observing: [\.standardErrorContent]
      ) {
        let inside = DispatchSemaphore(value: 0)
        Thread {
          RaceDetector.begin(.write, "shared ledger")
          inside.signal()
          DispatchSemaphore(value: 0).wait()
        }.start()
        inside.wait()
        RaceDetector.begin(.write, "shared ledger")
      }
      let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
      #expect(standardError.contains("Race on \"shared ledger\""))
    }

    @Test(arguments: [
      ("read", "read"), ("writer", "writer"), ("writeNext", "writeNext(_:)"),
      ("tryWrite", "tryWrite(_:)"), ("proxy", "write"),
    ])
    func aPlainSingleWriterUsedFromTwoThreadsIsReported(misuse: String, function: String) throws {
      let box = SingleWriter(value: Ledger())
      let address = "\(Unmanaged.passUnretained(box).toOpaque())"
      let firstCaseLine: UInt = #line + 4
      let reports = collectReports(where: { $0.resource.contains(address) }) {
        useFromAnotherThreadWhileCheckedOut(box) { box, held in
          switch misuse {
          case "read": _ = box.read()
          case "writer": _ = box.writer()
          case "writeNext": box.writeNext { $0.write.entries.append(1) }
          case "tryWrite": _ = box.tryWrite { $0.entries.append(2) }
          default: held.write.entries.append(3)
          }
        }
      }
      try #require(reports.count == 1)
      let report = reports[0]
      #expect(report.resource == "SingleWriter<Ledger> \(address)")
      #expect(report.inside.mode == .write)
      // Both sites are the caller's, not the library's (issue 14).
      #expect(report.inside.file == "SingleWriterTests/RaceDetectorTests.swift")
      if misuse == "proxy" {
        #expect(report.entering.function == function)  // a property: the library's site
      } else {
        #expect(report.entering.file == "SingleWriterTests/RaceDetectorTests.swift")
        let line = Int(report.entering.line) - Int(firstCaseLine)
        let expected = ["read", "writer", "writeNext", "tryWrite"].firstIndex(of: misuse)
        #expect(line == expected, "the line of the call in the switch")
      }
      #expect(report.entering.mode == (misuse == "read" ? .read : .write))
      #expect(report.description.contains("ThreadSafeSingleWriter"))
    }
  #else
    @Test func releaseBuildsReportNothing() {
      let resource = uniqueResource()
      let box = SingleWriter(value: Ledger())
      let reports = collectReports(where: { _ in true }) {
        _ = overlap(.write, .write, on: resource)
        _ = overlap(.write, .read, on: resource)
        useFromAnotherThreadWhileCheckedOut(box) { box, _ in _ = box.read }
      }
      #expect(reports.isEmpty)
    }
  #endif

  @Test func correctSingleThreadUseOfSingleWriterReportsNothing() {
    struct Failure: Error {}
    let reports = collectReports(where: { $0.resource.contains("SingleWriter<Quiet>") }) {
      let box = SingleWriter(value: Quiet())
      // A held checkout, queued writes, nested writeNext, and reads inside writes.
      var held = box.writer
      held?.write.items.append(0)
      _ = box.read
      box.writeNext { proxy in
        proxy.write.items.append(1)
        _ = box.read
        box.writeNext { $0.write.items.append(3) }
      }
      box.writeNext { $0.write.items.append(2) }
      held = nil
      // A queued write that keeps its proxy, and writes queued behind it.
      var kept: WriterProxy<Quiet>?
      box.writeNext { kept = $0 }
      box.writeNext { $0.write.items.append(5) }
      kept?.write.items.append(4)
      _ = box.tryWrite { $0.items.append(-1) }
      kept = nil
      // Closure writes, a throwing one, and a deep queue drained in a loop.
      _ = box.tryWrite { $0.items.append(6) }
      _ = try? box.tryWrite { (_: inout Quiet) throws(Failure) -> Void in throw Failure() }
      var again = box.writer
      for item in 7..<10_007 { box.writeNext { $0.write.items.append(item) } }
      again = nil
      #expect(box.read.items == Array(0..<10_007))
      _ = (held, kept, again)

      // Every section above has closed: another thread may take over the container
      // (the semaphore orders the hand-off) without a report.
      let cargo = Smuggled(box)
      let finished = DispatchSemaphore(value: 0)
      Thread {
        do {
          let box = cargo.take()
          _ = box.read
          box.writer?.write.items.removeAll()
          box.writeNext { $0.write.items.append(1) }
          _ = box.tryWrite { $0.items.append(2) }
        }
        finished.signal()
      }.start()
      finished.wait()
      #expect(box.read.items == [1, 2])
    }
    #expect(reports.isEmpty)
  }

  #if DEBUG  // race checks exist in debug builds only
    /// A plain `SingleWriter` owned by an actor: one method holds `writer` across an
    /// `await` while the actor's other methods read and write. The actor serializes them,
    /// whichever pool threads its jobs run on, so no report. Pool tasks spinning beside it
    /// make its jobs move between the pool's threads.
    @Test func anActorsMethodsTakingTurnsAcrossAwaitsAreOneOwner() async {
      struct ActorOwned { var items: [Int] = [] }
      actor Ledger {
        let state = SingleWriter(value: ActorOwned())
        var threads = Set<UInt>()
        func note() { threads.insert(UInt(bitPattern: Int(bitPattern: pthread_self()))) }
        func holdAcrossAwait(_ item: Int) async {
          note()
          guard let proxy = state.writer else {
            return state.writeNext { $0.write.items.append(contentsOf: [item, -item]) }
          }
          proxy.write.items.append(item)
          await Task.yield()
          note()
          proxy.write.items.append(-item)
        }
        func readAndWrite() {
          note()
          _ = state.read.items.count
          if state.tryWrite({ $0.items.append(0) }) == nil {
            state.writeNext { $0.write.items.append(0) }
          }
        }
        var count: Int { state.read.items.count }
      }
      let ledger = Ledger()
      var rounds = 0
      // Rounds until the actor's jobs have run on two threads (a quiet pool may keep them
      // on one), at most 20.
      let reports = await collectReports(where: { $0.resource.contains("ActorOwned") }) {
        repeat {
          rounds += 1
          await withTaskGroup(of: Void.self) { group in
            for item in 1...300 {
              group.addTask {
                if item % 3 == 0 {
                  await ledger.readAndWrite()
                } else {
                  await ledger.holdAcrossAwait(item)
                }
                // Busy work on the pool between calls, so the actor's next job may run on
                // the other thread.
                attackSpin(20_000)
              }
            }
          }
        } while await ledger.threads.count < 2 && rounds < 20
      }
      let first = reports.first.map { "\($0)" } ?? ""
      #expect(reports.isEmpty, "\(reports.count) reports, first: \(first)")
      #expect(await ledger.count == rounds * (200 * 2 + 100))
      #expect(await ledger.threads.count > 1, "the actor's jobs never moved between threads")
    }
  #endif
}
