// One contended sample: N threads released together from a spin barrier, each incrementing
// one shared counter until told to stop. Only the window in which all of them were
// running is measured: from the last thread's start to the first thread's end.

import BenchmarkSupport
import Dispatch
import Foundation
import Synchronization

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC` on Linux).
@inline(__always)
func now() -> UInt64 {
  DispatchTime.now().uptimeNanoseconds
}

typealias Padding = (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int)

/// The flag every loop checks once per increment, on cache lines of its own so that the
/// check is a load from the core's own cache until the flag is set.
final class StopFlag: Sendable {
  private let padBefore: Padding = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
  private let flag = Atomic(false)
  private let padAfter: Padding = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

  @inline(__always)
  var isSet: Bool { flag.load(ordering: .relaxed) }

  func set() { flag.store(true, ordering: .relaxed) }
}

/// Per-thread slots written by that thread only.
final class Slots: @unchecked Sendable {
  // Unchecked: thread `i` writes only `stamps[2i]`, `stamps[2i+1]` and `ops[i]`, and the
  // main thread reads them only after `DispatchGroup.wait()`, which orders those writes.
  let stamps: UnsafeMutableBufferPointer<UInt64>
  let ops: UnsafeMutableBufferPointer<Int>

  init(threads: Int) {
    stamps = .allocate(capacity: 2 * threads)
    stamps.initialize(repeating: 0)
    ops = .allocate(capacity: threads)
    ops.initialize(repeating: 0)
  }

  deinit {
    stamps.deallocate()
    ops.deallocate()
  }
}

/// The interval in which every thread was inside its loop: it opens when the last thread
/// starts and closes when the first one finishes, each time with the increments completed
/// by then, read from the counter itself (for `writeNext`, queued writes are not done).
final class Window: @unchecked Sendable {
  // Unchecked: `opened` is written only by the thread that brings `started` to the thread
  // count, `closed` only by the one that brings `finished` to 1, and both are read by the
  // main thread after `DispatchGroup.wait()`.
  let threads: Int
  let count: @Sendable () -> Int
  private let started = Atomic(0)
  private let finished = Atomic(0)
  var opened: (ns: UInt64, ops: Int) = (0, 0)
  var closed: (ns: UInt64, ops: Int) = (0, 0)

  init(threads: Int, count: @escaping @Sendable () -> Int) {
    self.threads = threads
    self.count = count
  }

  func start() {
    if started.add(1, ordering: .relaxed).newValue == threads {
      opened = (now(), count())
      // How long the read at the window's opening took (its count is taken after it).
      if debugStamps { print("open read", (now() - opened.ns) / 1000, "µs") }
    }
  }

  func finish() {
    if finished.add(1, ordering: .relaxed).oldValue == 0 {
      closed = (now(), count())
      if debugStamps { print("close read", (now() - closed.ns) / 1000, "µs") }
    }
  }
}

/// What one sample measured.
struct Sample {
  /// Increments made, over all threads.
  let ops: Int
  /// The increments the figure counts (for the window shape, those done in the window).
  let windowOps: Int
  /// Increments missing from the final value: must be 0.
  let lost: Int
  /// For timed rows, every call's wait.
  let waits: LatencyHistogram?
  /// The time in which all threads ran (last start to first end) over the time from the
  /// first start to the first end: below 1 by the time the last thread took to start.
  let overlap: Double
  /// ns per increment over the time the figure counts.
  let nsPerOp: Double
}

/// Runs one sample of `kind` on `threads` threads for about `milliseconds` after they start.
func runSample(_ kind: Kind, threads: Int, milliseconds: Double, timed: Bool) -> Sample {
  let trial = makeTrial(kind)
  let line = StartLine(threads, yieldEvery: 1 << 14)
  let stop = StopFlag()
  let slots = Slots(threads: threads)
  let window = Window(threads: threads, count: trial.count)
  let histograms = timed ? (0..<threads).map { _ in LatencyHistogram() } : []
  let done = DispatchGroup()
  for index in 0..<threads {
    done.enter()
    let thread = Thread {
      let waits = timed ? histograms[index] : nil
      let switchesBefore = debugStamps ? contextSwitches() : (0, 0)
      line.arriveAndWait()
      let start = now()
      window.start()
      let ops = trial.body(stop, waits)
      window.finish()
      let end = now()
      if debugStamps {
        let after = contextSwitches()
        print(
          "thread", index, "switches voluntary", after.0 - switchesBefore.0,
          "involuntary", after.1 - switchesBefore.1)
      }
      slots.stamps[2 * index] = start
      slots.stamps[2 * index + 1] = end
      slots.ops[index] = ops
      done.leave()
    }
    thread.stackSize = 1 << 20
    thread.start()
  }
  while !line.isOpen { usleep(50) }
  usleep(useconds_t(milliseconds * 1_000))
  stop.set()
  done.wait()
  let total = trial.total()  // for writeNext, waits behind any write still queued

  let starts = stride(from: 0, to: 2 * threads, by: 2).map { slots.stamps[$0] }
  let ends = stride(from: 1, to: 2 * threads, by: 2).map { slots.stamps[$0] }
  let run = ends.min()! - starts.min()!
  if debugStamps {
    let zero = starts.min()!
    // Increments counted in the window against calls made: far apart, writes were queued
    // and not yet run; close, the calls themselves were slow.
    print(
      kind, threads, "windowOps", window.closed.ops - window.opened.ops,
      "ops", slots.ops.reduce(0, +),
      zip(starts, ends).map { "\(($0 - zero) / 1000)-\(($1 - zero) / 1000)µs" })
  }
  let ops = slots.ops.reduce(0, +)
  // Closed before it opened: the threads never all ran at once.
  let open = window.closed.ns > window.opened.ns
  let windowNs = threads == 1 ? run : open ? window.closed.ns - window.opened.ns : 0
  let windowOps = threads == 1 ? ops : open ? window.closed.ops - window.opened.ops : 0
  let merged = histograms.first
  for other in histograms.dropFirst() { merged!.merge(other) }
  return Sample(
    ops: ops, windowOps: windowOps, lost: ops - total, waits: merged,
    overlap: Double(windowNs) / Double(max(run, 1)),
    // Only the window counts: before it and after it fewer threads contend.
    nsPerOp: Double(windowNs) / Double(max(windowOps, 1)))
}

/// Runs one sample of `kind` in the request-handler shape: each of `threads` threads makes
/// `calls` calls in a plain loop, released together from the same start line. The time runs
/// from the first start until every write has run (the last thread's return, then the final
/// value read behind any write still queued), over every call: what a user waiting for the
/// work gets, tails included. The overlap is the window shape's: the last thread started
/// before the first one finished, and within the first `--min-overlap` of its run.
func runPlainSample(_ kind: Kind, threads: Int, calls: Int) -> Sample {
  let trial = makeTrial(kind)
  let line = StartLine(threads, yieldEvery: 1 << 14)
  let slots = Slots(threads: threads)
  let finished = Atomic(0)
  let completed = Slots(threads: 1)  // the instant every write had run, and the total
  let done = DispatchGroup()
  for index in 0..<threads {
    done.enter()
    let thread = Thread {
      line.arriveAndWait()
      let start = now()
      trial.plain(calls)
      let end = now()
      slots.stamps[2 * index] = start
      slots.stamps[2 * index + 1] = end
      // The last one out waits for the queued writes, so no wake-up of the main thread
      // is in the figure.
      if finished.add(1, ordering: .acquiringAndReleasing).newValue == threads {
        completed.ops[0] = trial.total()
        completed.stamps[0] = now()
      }
      done.leave()
    }
    thread.stackSize = 1 << 20
    thread.start()
  }
  done.wait()
  let starts = stride(from: 0, to: 2 * threads, by: 2).map { slots.stamps[$0] }
  let ends = stride(from: 1, to: 2 * threads, by: 2).map { slots.stamps[$0] }
  let firstStart = starts.min()!
  let window = Int64(bitPattern: ends.min()! &- starts.max()!)
  let ops = threads * calls
  let elapsed = completed.stamps[0] - firstStart
  if debugStamps {
    print(
      kind, threads,
      zip(starts, ends).map { "\(($0 - firstStart) / 1000)-\(($1 - firstStart) / 1000)µs" },
      "done \(elapsed / 1000)µs")
  }
  return Sample(
    ops: ops, windowOps: ops, lost: ops - completed.ops[0], waits: nil,
    overlap: Double(max(window, 0)) / Double(max(ends.min()! - firstStart, 1)),
    nsPerOp: Double(elapsed) / Double(ops))
}

let debugStamps = getenv("CONTENDED_DEBUG") != nil

/// This thread's voluntary (it slept) and involuntary (it was preempted) context switches
/// so far, from Linux's /proc/thread-self/status; (0, 0) elsewhere.
func contextSwitches() -> (Int, Int) {
  guard let status = try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
  else { return (0, 0) }
  func value(_ key: String) -> Int {
    let line = status.split(separator: "\n").first { $0.hasPrefix(key) }
    return line.flatMap { Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) }
      ?? 0
  }
  return (value("voluntary_ctxt_switches"), value("nonvoluntary_ctxt_switches"))
}
