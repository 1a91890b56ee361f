import Foundation
import Testing

@testable import SingleWriter

// Promise "No wait inside a write": stopIfWaitingForItself / isAccessing must stop only
// waits this thread itself holds up, never a legitimate wait.

struct AtkCounter: Sendable {
  var n = 0
  mutating func writeOther(_ other: ThreadSafeSingleWriter<Int>) {
    n += 1
    other.withWriter { $0 += 1 }  // another container, held by another thread for a while
    n += 1
  }
  /// A write access held across a suspension: the task may resume on any pool thread.
  mutating func bumpAcross(
    _ started: Locked<UInt>, _ gate: Locked<CheckedContinuation<Void, Never>?>
  ) async {
    n += 1
    started.withLock { $0 = atkThreadID() }
    await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
    n += 1
  }
}

@Suite struct AttackPassWaitForItself {
  /// withWriter on B inside a proxy access of A, while B is held elsewhere: a legitimate
  /// wait (B's holder ends), must not stop.
  @Test func withWriterOnAnotherContainerInsideAProxyAccessWaits() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(10, "withWriter on B inside A's access")
      let a = ThreadSafeSingleWriter(value: AtkCounter())
      let b = ThreadSafeSingleWriter(value: 0)
      for _ in 0..<20 {
        holdWriterElsewhere(b, for: 0.01)
        let proxy = a.writer!
        proxy.write.writeOther(b)
      }
      exit(b.read { $0 } == 20 && a.read { $0.n } == 40 ? 0 : 1)
    }
    #expect(!standardError(result).contains("ThreadSafeSingleWriter:"), "\(exitReport(result))")
  }

  /// A task holds a write access through a proxy across an `await` (an async mutating
  /// method called through `proxy.write`). Another task that runs on the thread where the
  /// access began calls withWriter: a legitimate wait (the first task resumes on the other
  /// pool thread, ends its access and releases the proxy). `isAccessing` looks only at the
  /// thread, so the wait is stopped as "withWriter inside a write access through a proxy".
  /// Failed every run before its fix (debug and release): SIGILL with that message.
  @Test func withWriterFromAnotherTaskOnTheThreadOfASuspendedAccessWaits() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "withWriter by another task on the access's thread")
      let a = ThreadSafeSingleWriter(value: AtkCounter())
      let landed = await atkProbeTheThreadOfASuspendedAccess(a) { a.withWriter { $0.n += 100 } }
      attackErr("probes that landed on the access's thread: \(landed)\n")
      exit(0)
    }
    #expect(!standardError(result).contains(accessMessage), "\(exitReport(result))")
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
  }

  /// The same, for a `read` from another task on the thread of a suspended access
  /// (beginReadSlow's check, older than the fixes): a read that would only wait must not
  /// stop. Failed every run before its fix (debug and release): SIGILL, "read inside a write".
  @Test func readFromAnotherTaskOnTheThreadOfASuspendedAccessWaits() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(20, "read by another task on the access's thread")
      let a = ThreadSafeSingleWriter(value: AtkCounter())
      let landed = await atkProbeTheThreadOfASuspendedAccess(a) { _ = a.read { $0.n } }
      attackErr("probes that landed on the access's thread: \(landed)\n")
      exit(0)
    }
    #expect(!standardError(result).contains("read inside a write"), "\(exitReport(result))")
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
  }
}

/// In a child: 20 rounds in which a task holds a write access to `a` through a proxy
/// across a suspension, while probe tasks run until one lands on the thread where that
/// access began (for up to a second a round). That one lets another thread resume the
/// access 20 ms later, then calls `probe`, a legitimate wait. Returns how many landed.
/// `take` gives the task its proxy: by default it takes `writer` itself.
func atkProbeTheThreadOfASuspendedAccess(
  _ a: ThreadSafeSingleWriter<AtkCounter>,
  taking take: (@Sendable () async -> ThreadSafeWriterProxy<AtkCounter>)? = nil,
  _ probe: @escaping @Sendable () -> Void
) async -> Int {
  var landed = 0
  for _ in 0..<20 {
    let started = Locked<UInt>(0)
    let gate = Locked<CheckedContinuation<Void, Never>?>(nil)
    let first = Task {
      let proxy = await take?() ?? a.writer!
      await proxy.write.bumpAcross(started, gate)
    }
    while gate.withLock({ $0 }) == nil { try? await Task.sleep(nanoseconds: 100_000) }
    let thread = started.withLock { $0 }
    // Probes: the first one that runs on `thread` opens the gate and waits.
    let landedHere = Locked(false)
    let deadline = attackNow() + 1_000_000_000
    while !landedHere.withLock({ $0 }), attackNow() < deadline {
      await withTaskGroup(of: Void.self) { group in
        for _ in 0..<4 {
          group.addTask {
            guard atkThreadID() == thread,
              landedHere.withLock({ old in
                defer { old = true }
                return !old
              })
            else { return }
            let resume = gate.withLock { $0.take() }!
            Thread.detachNewThread {
              atkSleep(0.02)
              resume.resume()
            }
            probe()
          }
        }
      }
    }
    if landedHere.withLock({ $0 }) { landed += 1 } else { gate.withLock { $0.take() }?.resume() }
    await first.value
  }
  return landed
}
