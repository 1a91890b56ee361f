// One sample of the transactions case: a writer running transactions back to back while
// reader threads (or tasks, for the actor) read as fast as they can, until a stop flag.

import BenchmarkSupport
import Dispatch
import Foundation

/// What the threads of one sample did.
struct Sample {
  var transactions = 0
  var writerNs: UInt64 = 1
  /// Reads and running time per reader.
  var reads: [Int] = []
  var readerNs: [UInt64] = []
  /// Reads that began and ended inside one open transaction.
  var inside = 0
  /// Reads that saw part of a transaction: `x` not a multiple of its writes.
  var halfDone = 0
  /// Time all threads ran at once, over the time from the first start to the last end.
  var overlap = 0.0
  /// Transactions in which another writer got in (x did not grow by exactly `writes`).
  var broken = 0
  /// Increments missing from the final value.
  var lost = 0
  var latencies = LatencyHistogram()
  /// For each transaction, the writer's wait from asking to having exclusive access.
  var writerWaits = LatencyHistogram()

  var transactionsPerSecond: Double { Double(transactions) * 1e9 / Double(writerNs) }
  var readsPerSecond: Double {
    zip(reads, readerNs).reduce(0) { $0 + Double($1.0) * 1e9 / Double(max($1.1, 1)) }
  }
  var insideFraction: Double { Double(inside) / Double(max(reads.reduce(0, +), 1)) }
}

/// Per-thread results, each slot written by its own thread before it leaves the group.
final class Slots: @unchecked Sendable {
  // Unchecked: slot i is written only by thread i, read after `DispatchGroup.wait()`.
  var starts: [UInt64]
  var ends: [UInt64]
  var counts: [Int]
  var inside: [Int]
  var halfDone: [Int]
  var broken = 0
  let histograms: [LatencyHistogram]

  init(_ threads: Int) {
    starts = Array(repeating: 0, count: threads)
    ends = Array(repeating: 0, count: threads)
    counts = Array(repeating: 0, count: threads)
    inside = Array(repeating: 0, count: threads)
    halfDone = Array(repeating: 0, count: threads)
    histograms = (0..<threads).map { _ in LatencyHistogram() }
  }

  /// Slot 0 is the writer's; the others are readers'.
  func sample(writes: Int, finalValue: Int) -> Sample {
    var sample = Sample()
    sample.transactions = counts[0]
    sample.writerNs = max(ends[0] - starts[0], 1)
    sample.reads = Array(counts.dropFirst())
    sample.readerNs = zip(starts, ends).dropFirst().map { max($1 - $0, 1) }
    sample.inside = inside.reduce(0, +)
    sample.halfDone = halfDone.reduce(0, +)
    let window = Double(ends.min()!) - Double(starts.max()!)
    let span = Double(ends.max()! - starts.min()!)
    sample.overlap = max(window, 0) / max(span, 1)
    sample.broken = broken
    sample.lost = counts[0] * writes - finalValue
    for histogram in histograms.dropFirst() { sample.latencies.merge(histogram) }
    sample.writerWaits = histograms[0]
    return sample
  }
}

/// The writer's counts while it runs, written to slot 0 when it stops: one type for the
/// thread and the actor's task, so that both loops do exactly the same around each call.
struct WriterTally {
  let slots: Slots
  let waits: LatencyHistogram
  var count = 0
  var broken = 0

  init(_ slots: Slots) {
    self.slots = slots
    slots.starts[0] = now()
    waits = slots.histograms[0]
  }

  /// One transaction: the wait from `asked` to having exclusive access, and whether another
  /// writer got in (x did not grow by exactly `writes`).
  @inline(__always)
  mutating func record(asked: UInt64, start: Int, end: Int, writes: Int, openedAt: UInt64) {
    waits.recordLeavingOutLimit(openedAt - asked)
    if end - start != writes { broken += 1 }
    count += 1
  }

  func finish() {
    slots.ends[0] = now()
    slots.counts[0] = count
    slots.broken = broken
  }
}

/// A reader's counts while it runs, written to its slot when it stops; shared by threads and
/// tasks like `WriterTally`.
struct ReaderTally {
  let slots: Slots
  let index: Int
  let histogram: LatencyHistogram
  var previous: UInt64
  var count = 0
  var inside = 0
  var halfDone = 0
  var total = 0
  /// A transaction's writes: a value that is not a multiple of it is half a transaction.
  let writes: Int

  init(_ slots: Slots, _ index: Int, writes: Int) {
    self.writes = writes
    self.slots = slots
    self.index = index
    histogram = slots.histograms[index]
    previous = now()
    slots.starts[index] = previous
  }

  /// Records the time since the previous read: the read itself, plus a clock read and two
  /// loads of the sequence, which every variant pays alike. Then runs the work between
  /// reads, which is not part of a read's latency.
  @inline(__always)
  mutating func record(_ value: Int, before: Int, after: Int, readWork: Work) {
    let time = now()
    histogram.recordLeavingOutLimit(time - previous)
    previous = time
    total &+= value
    if before == after && before & 1 == 1 { inside += 1 }
    if value % writes != 0 { halfDone += 1 }
    count += 1
    if readWork.iterations > 0 {
      readWork.run()
      previous = now()
    }
  }

  func finish() {
    slots.ends[index] = now()
    slots.counts[index] = count
    slots.inside[index] = inside
    slots.halfDone[index] = halfDone
    sink(total)
  }
}

/// One sample on threads: one writer and `readers` readers released from a spin barrier.
func runThreads<S: Shared>(
  _: S.Type, readers: Int, milliseconds: Double, writes: Int, work: Work, readWork: Work,
  pinned: Bool
) -> Sample {
  let shared = S()
  let sequence = TransactionSequence()
  let stop = StopFlag()
  let line = StartLine(readers + 1, yieldEvery: 1 << 10)
  let slots = Slots(readers + 1)
  let done = DispatchGroup()
  func spawn(_ body: @escaping @Sendable () -> Void) {
    done.enter()
    let thread = Thread {
      line.arriveAndWait()
      body()
      done.leave()
    }
    thread.stackSize = 1 << 20
    thread.start()
  }
  spawn {
    if pinned { pinCurrentThread(to: core(forThread: 0)) }
    var writer = WriterTally(slots)
    while !stop.isSet {
      let asked = now()
      let (start, end) = shared.transaction(writes: writes, work: work, sequence: sequence)
      writer.record(
        asked: asked, start: start, end: end, writes: writes, openedAt: sequence.openedAt)
    }
    writer.finish()
  }
  for index in 1...readers {
    spawn {
      if pinned { pinCurrentThread(to: core(forThread: index)) }
      var reader = ReaderTally(slots, index, writes: writes)
      while !stop.isSet {
        let before = sequence.load()
        let value = shared.read()
        let after = sequence.load()
        reader.record(value, before: before, after: after, readWork: readWork)
      }
      reader.finish()
    }
  }
  usleep(useconds_t(milliseconds * 1_000))
  stop.set()
  done.wait()
  return slots.sample(writes: writes, finalValue: shared.read())
}

/// The same sample with the actor: the writer and the readers are tasks on the global
/// executor, since every access awaits.
func runActor(
  readers: Int, milliseconds: Double, writes: Int, work: Work, readWork: Work
) -> Sample {
  let shared = ActorShared()
  let sequence = TransactionSequence()
  let stop = StopFlag()
  let slots = Slots(readers + 1)
  let done = DispatchGroup()
  done.enter()
  Task.detached {
    var writer = WriterTally(slots)
    while !stop.isSet {
      let asked = now()
      let (start, end) = await shared.transaction(
        writes: writes, work: work, sequence: sequence)
      writer.record(
        asked: asked, start: start, end: end, writes: writes, openedAt: sequence.openedAt)
    }
    writer.finish()
    done.leave()
  }
  for index in 1...readers {
    done.enter()
    Task.detached {
      var reader = ReaderTally(slots, index, writes: writes)
      while !stop.isSet {
        let before = sequence.load()
        let value = await shared.read()
        let after = sequence.load()
        reader.record(value, before: before, after: after, readWork: readWork)
      }
      reader.finish()
      done.leave()
    }
  }
  usleep(useconds_t(milliseconds * 1_000))
  stop.set()
  done.wait()
  return slots.sample(writes: writes, finalValue: blockingAwait { await shared.read() })
}

/// With `pinned`, the threads are pinned to cores; the actor's tasks cannot be, and run
/// on the global executor's threads either way.
func runSample(
  _ variant: Variant, readers: Int, milliseconds: Double, writes: Int, work: Work,
  readWork: Work, pinned: Bool
) -> Sample {
  func threads<S: Shared>(_ type: S.Type) -> Sample {
    runThreads(
      type, readers: readers, milliseconds: milliseconds, writes: writes, work: work,
      readWork: readWork, pinned: pinned)
  }
  switch variant {
  case .mutex: return threads(MutexShared.self)
  case .nslock: return threads(NSLockShared.self)
  case .rwlock: return threads(RWLockShared.self)
  case .article: return threads(ArticleShared.self)
  case .singleWriter: return threads(SingleWriterShared.self)
  case .twoLocks: return threads(TwoLocksShared.self)
  case .snapshot: return threads(SnapshotShared.self)
  case .transaction: return threads(TransactionShared.self)
  case .actor:
    return runActor(
      readers: readers, milliseconds: milliseconds, writes: writes, work: work, readWork: readWork
    )
  }
}
