import Foundation
import Testing

@testable import SingleWriter

// Promise "Races reported": with the executor identity, two different actors using one
// plain SingleWriter at once, or an actor and a plain thread, must still be reported in
// debug builds; one actor's methods taking turns must not.

final class AtkSmuggled<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}

struct AtkLedger { var items: [Int] = [] }

actor AtkActorA {
  func hold(_ box: AtkSmuggled<SingleWriter<AtkLedger>>, while body: @Sendable () async -> Void)
    async
  {
    let proxy = box.value.writer!
    proxy.write.items.append(1)
    await body()
    proxy.write.items.append(2)
  }
  func holdRecording(
    _ box: AtkSmuggled<SingleWriter<AtkLedger>>, _ thread: Locked<(UInt, UInt)>,
    while body: @Sendable () async -> Void
  ) async {
    let proxy = box.value.writer!
    thread.withLock { $0.0 = atkThreadID() }
    proxy.write.items.append(1)
    await body()
    proxy.write.items.append(2)
  }
  /// Holds the writer across a call to `b`; returns the threads that took the writer and
  /// that read in `b`.
  func holdAcross(_ box: AtkSmuggled<SingleWriter<AtkLedger>>, _ b: AtkActorB) async -> (UInt, UInt)
  {
    let proxy = box.value.writer!
    let mine = atkThreadID()
    proxy.write.items.append(1)
    let theirs = await Task.detached { await b.use(box) }.value
    proxy.write.items.append(2)
    return (mine, theirs)
  }
}

actor AtkActorB {
  func use(_ box: AtkSmuggled<SingleWriter<AtkLedger>>) -> UInt {
    _ = box.value.read.items.count
    return atkThreadID()
  }
}

/// An actor whose jobs run on a thread of its own (a custom serial executor).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)  // ExecutorJob
actor AtkOwnThreadActor {
  static let executor = OwnThreadExecutor()
  nonisolated var unownedExecutor: UnownedSerialExecutor {
    Self.executor.asUnownedSerialExecutor()
  }
  func use(_ box: AtkSmuggled<SingleWriter<AtkLedger>>) {
    _ = box.value.read.items.count
  }
}

/// The reports about an `AtkLedger` while `body` runs.
func atkCollectReports(_ body: () async -> Void) async -> [RaceReport] {
  let collection = ReportCollection { $0.resource.contains("AtkLedger") }
  defer { collection.stop() }
  await body()
  return collection.reports
}

/// Runs 200 rounds of `round`, each on a fresh plain `SingleWriter`, which records the
/// thread where the writer was taken and the one that read meanwhile: every round in which
/// they differ must have been reported. (Under load every round may run on one thread:
/// then the test is inconclusive.)
func atkExpectEveryCrossThreadRoundReported(
  _ label: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ round: (AtkSmuggled<SingleWriter<AtkLedger>>, Locked<(UInt, UInt)>) async -> Void
) async {
  var differentThreads = 0
  var reported = 0
  for _ in 0..<200 {
    let box = AtkSmuggled(SingleWriter(value: AtkLedger()))
    let threads = Locked((UInt(0), UInt(0)))
    let reports = await atkCollectReports { await round(box, threads) }
    let (mine, theirs) = threads.withLock { $0 }
    if mine != theirs {
      differentThreads += 1
      if !reports.isEmpty { reported += 1 }
    }
  }
  attackErr("\(label): \(reported) of \(differentThreads) cross-thread rounds reported\n")
  #expect(
    reported == differentThreads,
    "\(reported) of \(differentThreads) cross-thread rounds reported",
    sourceLocation: sourceLocation)
}

// Nested in `RaceDetectorTests`, which is serialized: these tests swap the global
// `RaceDetector.onRace` handler, as that suite's tests do, so they must not run beside them.
extension RaceDetectorTests {
  @Suite(.serialized) struct AttackPassRaces {
    #if DEBUG
      /// Actor A (default executor, on the pool) holds the writer across an await; actor B,
      /// on a thread of its own, reads meanwhile: a race on two threads.
      @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
      @Test func twoDifferentActorsOnDifferentThreadsAreReported() async {
        let box = AtkSmuggled(SingleWriter(value: AtkLedger()))
        let a = AtkActorA()
        let b = AtkOwnThreadActor()
        let reports = await atkCollectReports {
          await a.hold(box) { await Task.detached { await b.use(box) }.value }
        }
        #expect(reports.count >= 1, "no report for two actors on two threads")
      }

      /// Two default actors: rounds in which B's read ran on another thread than the one
      /// where A took the writer must each be reported.
      @Test func twoDefaultActorsOnDifferentThreadsAreReported() async {
        await atkExpectEveryCrossThreadRoundReported("default actors") { box, threads in
          let b = AtkActorB()
          let pair = await AtkActorA().holdAcross(box, b)
          threads.withLock { $0 = pair }
        }
      }

      /// Actor A holds the writer across an await; a plain thread reads meanwhile.
      @Test func anActorAndAPlainThreadAreReported() async {
        let box = AtkSmuggled(SingleWriter(value: AtkLedger()))
        let a = AtkActorA()
        let reports = await atkCollectReports {
          await a.hold(box) {
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
              _ = box.value.read.items.count
              done.signal()
            }
            await withCheckedContinuation { continuation in
              Thread.detachNewThread {
                done.wait()
                continuation.resume()
              }
            }
          }
        }
        #expect(reports.count >= 1, "no report for an actor and a thread")
      }

      /// Actor A holds the writer across an await; a detached (non-isolated) task reads
      /// meanwhile: every round in which it ran on another thread must be reported.
      @Test func anActorAndANonisolatedTaskOnAnotherThreadAreReported() async {
        await atkExpectEveryCrossThreadRoundReported("nonisolated reader") { box, threads in
          await AtkActorA().holdRecording(box, threads) {
            let theirs = await Task.detached { () -> UInt in
              _ = box.value.read.items.count
              return atkThreadID()
            }.value
            threads.withLock { $0.1 = theirs }
          }
        }
      }

      /// Two tasks of the same actor, taking turns, one holding across an await: no report.
      @Test func theSameActorIsNotReported() async {
        actor Same {
          let state = SingleWriter(value: AtkLedger())
          func hold() async {
            let proxy = state.writer
            proxy?.write.items.append(1)
            try? await Task.sleep(nanoseconds: 50_000)
            proxy?.write.items.append(2)
          }
          func use() { _ = state.read.items.count }
        }
        let same = Same()
        let reports = await atkCollectReports {
          await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
              group.addTask { if index % 2 == 0 { await same.hold() } else { await same.use() } }
            }
          }
        }
        #expect(reports.isEmpty, "\(reports.count) reports for one actor")
      }
    #endif
  }
}
