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
    _ started: AtkBox<UInt>, _ gate: AtkBox<CheckedContinuation<Void, Never>?>
  ) async {
    n += 1
    started.with { $0 = atkThreadID() }
    await withCheckedContinuation { continuation in gate.with { $0 = continuation } }
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
        let taken = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
          let held = b.writer!
          taken.signal()
          atkSleep(0.01)
          withExtendedLifetime(held) {}
        }
        taken.wait()
        let proxy = a.writer!
        proxy.write.writeOther(b)
      }
      exit(b.read { $0 } == 20 && a.read { $0.n } == 40 ? 0 : 1)
    }
    #expect(!atkStderr(result).contains("ThreadSafeSingleWriter:"), "\(exitReport(result))")
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
      var landed = 0
      for _ in 0..<20 {
        let started = AtkBox<UInt>(0)
        let gate = AtkBox<CheckedContinuation<Void, Never>?>(nil)
        let first = Task {
          let proxy = a.writer!
          await proxy.write.bumpAcross(started, gate)
        }
        while gate.with({ $0 }) == nil { try? await Task.sleep(nanoseconds: 100_000) }
        let thread = started.with { $0 }
        // Probes: the first one that runs on `thread` opens the gate and waits for `a`.
        let probe = AtkBox(false)
        let deadline = attackNow() + 1_000_000_000
        while !probe.with({ $0 }), attackNow() < deadline {
          await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
              group.addTask {
                guard atkThreadID() == thread,
                  probe.with({ old in
                    defer { old = true }
                    return !old
                  })
                else { return }
                let resume = gate.with { $0.take() }!
                Thread.detachNewThread {
                  atkSleep(0.02)
                  resume.resume()
                }
                a.withWriter { $0.n += 100 }
              }
            }
          }
        }
        if probe.with({ $0 }) { landed += 1 } else { gate.with { $0.take() }?.resume() }
        await first.value
      }
      attackErr("probes that landed on the access's thread: \(landed)\n")
      exit(0)
    }
    #expect(!atkStderr(result).contains(accessMessage), "\(exitReport(result))")
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
      var landed = 0
      for _ in 0..<20 {
        let started = AtkBox<UInt>(0)
        let gate = AtkBox<CheckedContinuation<Void, Never>?>(nil)
        let first = Task {
          let proxy = a.writer!
          await proxy.write.bumpAcross(started, gate)
        }
        while gate.with({ $0 }) == nil { try? await Task.sleep(nanoseconds: 100_000) }
        let thread = started.with { $0 }
        let probe = AtkBox(false)
        let deadline = attackNow() + 1_000_000_000
        while !probe.with({ $0 }), attackNow() < deadline {
          await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
              group.addTask {
                guard atkThreadID() == thread,
                  probe.with({ old in
                    defer { old = true }
                    return !old
                  })
                else { return }
                let resume = gate.with { $0.take() }!
                Thread.detachNewThread {
                  atkSleep(0.02)
                  resume.resume()
                }
                _ = a.read { $0.n }
              }
            }
          }
        }
        if probe.with({ $0 }) { landed += 1 } else { gate.with { $0.take() }?.resume() }
        await first.value
      }
      attackErr("probes that landed on the access's thread: \(landed)\n")
      exit(0)
    }
    #expect(!atkStderr(result).contains("read inside a write"), "\(exitReport(result))")
    #expect(result?.exitStatus == .exitCode(0), "\(exitReport(result))")
  }
}
