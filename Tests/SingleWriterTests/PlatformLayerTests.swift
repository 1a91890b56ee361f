import Dispatch
import Foundation
import SingleWriterAtomics
import Testing

@testable import SingleWriter

/// The C platform layer's promises that the Swift code builds on. The suite runs plain,
/// with `-Xcc -DSINGLEWRITER_PORTABLE_WAIT` (the parking lot that Apple OSes before
/// `os_sync` get) and with `-Xcc -DSINGLEWRITER_CHAOS`.
@Suite struct PlatformLayerTests {
  /// A word at a stable address, as the waits need.
  final class Word: @unchecked Sendable {
    // Sendable: the pointee is a C11 atomic, only touched through the sw_ functions.
    let pointer = UnsafeMutablePointer<sw_atomic_u32>.allocate(capacity: 1)
    init() { pointer.initialize(to: sw_atomic_u32()) }
    deinit { pointer.deallocate() }
  }

  @Test func theHoldersTheEnqueuersAndTheServersAtomicsAreOnCacheLinesOfTheirOwn() {
    let line = Int(SW_CACHE_LINE)
    #expect(MemoryLayout<sw_ts_sync>.size == 3 * line)
    let sync = UnsafeMutablePointer<sw_ts_sync>.allocateOnOwnCacheLines(sw_ts_sync())
    defer { sync.deallocate() }
    let base = Int(bitPattern: sync)
    #expect(base % line == 0)
    func lineOf<T>(_ field: UnsafeMutablePointer<T>) -> Int {
      (Int(bitPattern: field) - base) / line
    }
    for holder in [lineOf(sw_ts_state(sync)), lineOf(sw_ts_sequence(sync))] {
      #expect(holder == 0)
    }
    #expect(lineOf(sw_ts_writing_thread(sync)) == 0)
    #expect(lineOf(sw_ts_checkout_holder(sync)) == 0)
    #expect(lineOf(sw_ts_queued_hint(sync)) == 1)
    #expect(lineOf(sw_ts_hand_off_lock(sync)) == 1)
    #expect(lineOf(sw_ts_arrived_writes(sync)) == 1)
    #expect(lineOf(sw_ts_started_writes(sync)) == 2)
    #expect(lineOf(sw_ts_room(sync)) == 2)
  }

  @Test func threadIDsAreNonZeroDistinctStableAndLeaveTheLowBitFree() async {
    // runOnThread suspends this task without blocking a pool thread.
    let here = sw_current_thread()
    #expect(here != 0)
    #expect(here & 1 == 0)
    #expect(sw_current_thread() == here)
    #expect(sw_current_thread_slow() != 0)
    let there = await runOnThread(stackSize: 1 << 20) { sw_current_thread() }
    #expect(there != 0)
    #expect(there & 1 == 0)
    #expect(there != here)
  }

  /// A proxy's holder is recorded by an identity no later task or thread is given: two
  /// tasks in turn, which the runtime may give the same memory, and two threads in turn,
  /// which may be given the same thread pointer, are told apart; a task is the same one
  /// across a suspension, on whatever thread it resumes.
  @Test func holderIdentitiesAreNeverReusedAndATasksSurvivesItsSuspensions() async {
    var tasks = Set<UInt>()
    var holders = Set<UInt>()
    for _ in 0..<50 {
      let (task, holder, resumed) = await Task.detached { () -> (UInt, UInt, UInt) in
        let task = sw_current_task()
        let holder = sw_current_task_holder()
        await Task.yield()
        return (task, holder, sw_current_task_holder())
      }.value
      #expect(holder & 1 == 1)
      #expect(resumed == holder)
      #expect(sw_current_holder() != holder)
      tasks.insert(task)
      holders.insert(holder)
    }
    #expect(holders.count == 50, "task addresses reused: \(50 - tasks.count)")
    var threads = Set<UInt>()
    var serials = Set<UInt>()
    for _ in 0..<20 {
      let (thread, serial, holder, inTask) = await runOnThread(stackSize: 1 << 20) {
        (
          sw_current_thread(), sw_current_thread_serial(), sw_current_holder(),
          sw_current_task_holder()
        )
      }
      #expect(serial != 0 && serial & 1 == 0)
      #expect(holder == serial)
      #expect(inTask == 0)
      threads.insert(thread)
      serials.insert(serial)
    }
    #expect(serials.count == 20, "thread ids reused: \(20 - threads.count)")
  }

  @Test func aTimedWaitGivesUpAfterItsTimeout() {
    let word = Word()
    let start = sw_monotonic_ns()
    var woken = true
    // A wait may return early (spuriously, or in chaos mode): wait out the time.
    while woken, sw_monotonic_ns() - start < 50_000_000 {
      woken = sw_wait_for(word.pointer, 0, 50_000_000)
    }
    #expect(!woken)
    #expect(sw_monotonic_ns() - start >= 45_000_000)
  }

  /// Runs `body` on a new thread once it has signalled that it is about to wait, then
  /// changes the word to 1 and wakes it; returns what the thread returned. Blocks no
  /// thread of the concurrency pool, which the waits here would starve.
  func wakeAfterWaiting<R: Sendable>(
    _ word: Word, wake: (UnsafeMutablePointer<sw_atomic_u32>) -> Void,
    _ body: @escaping @Sendable () -> R
  ) -> R {
    let waiting = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    let result = Locked<R?>(nil)
    Thread {
      waiting.signal()
      let value = body()
      result.withLock { $0 = value }
      done.signal()
    }.start()
    waiting.wait()
    usleep(20_000)  // most likely asleep by now; correctness needs no sleep
    sw_store_release(word.pointer, 1)
    wake(word.pointer)
    done.wait()
    return result.withLock { $0! }
  }

  @Test func aTimedWaitReturnsWhenWokenLongBeforeItsTimeout() {
    let word = Word()
    let (woken, elapsed) = wakeAfterWaiting(word, wake: sw_wake_all) {
      let start = sw_monotonic_ns()
      var woken = true
      while woken, sw_load_acquire(word.pointer) == 0 {
        woken = sw_wait_for(word.pointer, 0, 20_000_000_000)
      }
      return (woken, sw_monotonic_ns() - start)
    }
    #expect(woken)
    #expect(elapsed < 60_000_000_000)  // a hang watchdog, not a timing
  }

  @Test func anUntimedWaitSleepsUntilWoken() {
    let word = Word()
    let seen = wakeAfterWaiting(word, wake: sw_wake_one) {
      while sw_load_acquire(word.pointer) == 0 { sw_wait(word.pointer, 0) }
      return sw_load_acquire(word.pointer)
    }
    #expect(seen == 1)
  }

  @Test func theWaitPrimitiveIsOneThatBlocks() {
    let name = String(cString: sw_wait_primitive())
    #expect(["futex", "WaitOnAddress", "os_sync_wait_on_address", "parking lot"].contains(name))
  }

  @Test func theMonotonicClockAdvances() {
    let first = sw_monotonic_ns()
    usleep(2_000)
    #expect(sw_monotonic_ns() - first >= 1_000_000)
  }

  @Test func callStacksAndThreadNamesAreDescribed() {
    var frames = [UnsafeMutableRawPointer?](repeating: nil, count: 16)
    let count = Int(sw_backtrace(&frames, Int32(frames.count)))
    #expect(count > 0)  // glibc has backtrace; musl would give 0
    var line = [CChar](repeating: 0, count: 256)
    sw_describe_address(frames[0], &line, line.count)
    #expect(line[0] != 0)
    var name = [CChar](repeating: 0, count: 64)
    let found = Int(sw_current_thread_name(&name, name.count))
    #expect([SW_THREAD_NAME_NONE, SW_THREAD_NAME_WHOLE, SW_THREAD_NAME_TRUNCATED].contains(found))
    // Only a name that fills what the OS keeps (15 bytes on Linux) is reported as cut.
    if found == SW_THREAD_NAME_TRUNCATED { #expect(strlen(name) >= 15) }
  }
}
