// Clock, work and stop flag shared by both cases.

import BenchmarkSupport
import Dispatch
import Foundation
import Synchronization

/// Nanoseconds on the monotonic clock.
@inline(__always)
func now() -> UInt64 {
  DispatchTime.now().uptimeNanoseconds
}

/// A fixed amount of arithmetic between two writes of a transaction, the same in every
/// variant. A fixed count, not a deadline: if the writer is preempted, its transaction
/// takes longer, and that shows in transactions/s.
struct Work: Sendable {
  let iterations: Int

  /// Sized so that one call takes about `nanoseconds` on this machine, now.
  static func calibrated(nanoseconds: Double) -> Work {
    let probe = 100_000
    var best = Double.infinity
    for _ in 0..<20 {
      let start = now()
      _ = spin(probe)
      best = min(best, Double(now() - start))
    }
    return Work(iterations: max(1, Int(nanoseconds / (best / Double(probe)))))
  }

  @inline(__always)
  func run() { _ = spin(iterations) }
}

/// A chain of dependent steps (multiply, add, xor-shift) with no closed form the
/// optimizer could use instead of the loop. It starts from and ends in an atomic, so it
/// is never moved across the clock reads around it nor dropped.
@inline(never)
func spin(_ iterations: Int) -> UInt64 {
  var x = sunk.load(ordering: .relaxed) | 1
  for _ in 0..<iterations {
    x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    x ^= x >> 29
  }
  sunk.store(x, ordering: .relaxed)
  return x
}

/// Stores a result where the optimizer must assume someone reads it, so the work that
/// made it cannot be dropped.
@inline(__always)
func sink(_ value: UInt64) { sunk.store(value, ordering: .relaxed) }
@inline(__always)
func sink(_ value: Int) { sink(UInt64(bitPattern: Int64(value))) }
let sunk = Atomic<UInt64>(0)

/// Set once by the main thread; every loop checks it once per operation.
final class StopFlag: Sendable {
  private let flag = Atomic(false)
  @inline(__always) var isSet: Bool { flag.load(ordering: .relaxed) }
  func set() { flag.store(true, ordering: .relaxed) }
}

/// Odd while a transaction is open: the writer bumps it after it has exclusive access
/// and again before it gives it up. A read that sees the same odd value before and after
/// ran entirely inside one open transaction.
final class TransactionSequence: @unchecked Sendable {
  // Unchecked: `openedAt` is written and read only by the writer.
  private let value = Atomic(0)
  /// When the last transaction got exclusive access.
  private(set) var openedAt: UInt64 = 0
  @inline(__always) func open() {
    openedAt = now()
    value.add(1, ordering: .releasing)
  }
  @inline(__always) func close() { value.add(1, ordering: .releasing) }
  @inline(__always) func load() -> Int { value.load(ordering: .acquiring) }
}

/// Pins the calling thread to `cpu` (Linux only; elsewhere a no-op).
func pinCurrentThread(to cpu: Int) {
  #if os(Linux)
    var mask = [UInt64](repeating: 0, count: 16)  // cpu_set_t: 1,024 bits
    mask[cpu / 64] = 1 << UInt64(cpu % 64)
    _ = mask.withUnsafeBytes { linuxSchedSetAffinity(0, $0.count, $0.baseAddress!) }
  #endif
}

#if os(Linux)
  // Glibc declares it only under _GNU_SOURCE, which Swift's Glibc module does not set.
  @_silgen_name("sched_setaffinity")
  func linuxSchedSetAffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeRawPointer) -> Int32
#endif

/// The core for thread `index` of a pinned sample: the writer (0) alone on core 0, the
/// readers on the others, as on a machine with a core free for each.
func core(forThread index: Int) -> Int {
  let cores = ProcessInfo.processInfo.activeProcessorCount
  return index == 0 || cores < 2 ? 0 : 1 + (index - 1) % (cores - 1)
}
