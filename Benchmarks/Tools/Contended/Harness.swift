// One contended sample: N threads released together from a spin barrier, each making a
// fixed number of increments of one shared counter. Only the window in which all of them
// were running is measured: from the last thread's start to the first thread's end.

import Dispatch
import Foundation
import Synchronization

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC` on Linux).
@inline(__always)
func now() -> UInt64 {
  DispatchTime.now().uptimeNanoseconds
}

/// A one-shot start line. Threads spin on one atomic word until the last one arrives, so
/// they leave within the same few hundred nanoseconds; nobody is woken up through the
/// kernel, as a semaphore or condition would.
final class StartLine: Sendable {
  private let arrived = Atomic(0)
  private let count: Int

  init(_ count: Int) { self.count = count }

  func arriveAndWait() {
    if arrived.add(1, ordering: .acquiringAndReleasing).newValue == count { return }
    var spins = 0
    while arrived.load(ordering: .acquiring) < count {
      spins &+= 1
      // With more threads than cores, a thread still on its way needs a core to arrive.
      if spins & 0x3FFF == 0 { sched_yield() }
    }
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
    if started.add(1, ordering: .relaxed).newValue == threads { opened = (now(), count()) }
  }

  func finish() {
    if finished.add(1, ordering: .relaxed).oldValue == 0 { closed = (now(), count()) }
  }
}

/// Per-thread slots written by that thread only: start and end stamps, and for timed
/// rows one wait per operation.
final class Slots: @unchecked Sendable {
  // Unchecked: thread `i` writes only `stamps[2i]`, `stamps[2i+1]` and `waits[i]`, and the
  // main thread reads them only after `DispatchGroup.wait()`, which orders those writes.
  let stamps: UnsafeMutableBufferPointer<UInt64>
  let waits: [UnsafeMutablePointer<UInt32>]

  init(threads: Int, waitsPerThread: Int) {
    stamps = .allocate(capacity: 2 * threads)
    stamps.initialize(repeating: 0)
    waits = (0..<threads).map { _ in .allocate(capacity: waitsPerThread) }
  }

  deinit {
    stamps.deallocate()
    for buffer in waits { buffer.deallocate() }
  }
}

/// What one sample measured.
struct Sample {
  /// Calls made, over all threads.
  let ops: Int
  /// Barrier release (first start) to the last thread's end.
  let spanNs: UInt64
  /// The time in which all threads ran (last start to first end) and the increments
  /// completed in it; for one thread, the whole run.
  let windowNs: UInt64
  let windowOps: Int
  /// `windowNs` over `spanNs`.
  var overlap: Double { Double(windowNs) / Double(max(spanNs, 1)) }
  /// Increments missing from the final value: must be 0.
  let lost: Int
  /// For timed rows, every operation's wait in ns.
  let waits: [UInt32]

  /// Only the window counts: before it and after it fewer threads contend.
  var nsPerOp: Double { Double(windowNs) / Double(max(windowOps, 1)) }
}

/// Runs one sample of `kind` on `threads` threads of `opsPerThread` increments each.
func runSample(_ kind: Kind, threads: Int, opsPerThread: Int, timed: Bool) -> Sample {
  let trial = makeTrial(kind)
  let line = StartLine(threads)
  let slots = Slots(threads: threads, waitsPerThread: timed ? opsPerThread : 0)
  let window = Window(threads: threads, count: trial.count)
  let done = DispatchGroup()
  for index in 0..<threads {
    done.enter()
    let thread = Thread {
      let waits = timed ? slots.waits[index] : nil
      line.arriveAndWait()
      let start = now()
      window.start()
      trial.body(opsPerThread, waits)
      window.finish()
      let end = now()
      slots.stamps[2 * index] = start
      slots.stamps[2 * index + 1] = end
      done.leave()
    }
    thread.stackSize = 1 << 20
    thread.start()
  }
  done.wait()
  let total = trial.total()  // for writeNext, waits behind any write still queued

  let starts = stride(from: 0, to: 2 * threads, by: 2).map { slots.stamps[$0] }
  let ends = stride(from: 1, to: 2 * threads, by: 2).map { slots.stamps[$0] }
  let span = ends.max()! - starts.min()!
  let ops = threads * opsPerThread
  // Closed before it opened: the threads never all ran at once.
  let open = window.closed.ns > window.opened.ns
  let windowNs = threads == 1 ? span : open ? window.closed.ns - window.opened.ns : 0
  let windowOps = threads == 1 ? ops : open ? window.closed.ops - window.opened.ops : 0
  var waits: [UInt32] = []
  if timed {
    waits.reserveCapacity(threads * opsPerThread)
    for buffer in slots.waits {
      waits.append(contentsOf: UnsafeBufferPointer(start: buffer, count: opsPerThread))
    }
  }
  return Sample(
    ops: ops, spanNs: span, windowNs: windowNs, windowOps: windowOps, lost: ops - total,
    waits: waits)
}
