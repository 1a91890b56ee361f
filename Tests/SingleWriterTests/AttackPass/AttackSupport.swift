import Foundation
import Testing

@testable import SingleWriter

// Shared helpers of the attack pass (the general ones are in Support.swift). Every test
// that could hang runs in a child process with `attackWatchdog` (exit status 3, "WATCHDOG"
// on standard error); a child that finds a promise broken says "BREAK" and exits with 1.

func atkThreadID() -> UInt { UInt(pthread_self()) }

typealias AtkPair = Pair

/// Blocks the calling thread (callable from async code on purpose).
func atkSleep(_ seconds: Double) { Thread.sleep(forTimeInterval: seconds) }

/// Queues a chain of `left + 1` writes, each queueing the next from its body.
func atkChain(_ a: ThreadSafeSingleWriter<Int>, _ left: Int, _ depth: Locked<Int>) {
  a.writeNext { proxy in
    proxy.write += 1
    depth.withLock { $0 += 1 }
    if left > 0 { atkChain(a, left - 1, depth) }
  }
}

/// Ends a child: with status 1 and `message` after "BREAK" when `broken`, else with 0.
func atkEnd(breakingIf broken: Bool, _ message: @autoclosure () -> String = "") -> Never {
  if broken {
    attackErr("BREAK\(message().isEmpty ? "" : ": \(message())")\n")
    exit(1)
  }
  exit(0)
}

/// A child's result, expected to hold no "BREAK" line (see `atkDiag`).
func expectNoBreak(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
  atkDiag(result)
  #expect(
    !standardError(result).contains("BREAK"), "\(exitReport(result))",
    sourceLocation: sourceLocation)
}

/// The exit condition a test expects, or, for diagnosing a failure, the one named by
/// the environment variable ATK_EXPECT ("sigill", "sigtrap", or an exit code), so that
/// the child's standard error is shown.
func atkExpect(_ normal: ExitTest.Condition) -> ExitTest.Condition {
  switch ProcessInfo.processInfo.environment["ATK_EXPECT"] {
  case "sigill"?: return .signal(SIGILL)
  case "sigtrap"?: return .signal(SIGTRAP)
  case let code?: return .exitCode(CInt(code) ?? 0)
  case nil: return normal
  }
}

/// With ATK_EXPECT set, shows a child's standard error.
func atkDiag(_ result: ExitTest.Result?) {
  if ProcessInfo.processInfo.environment["ATK_EXPECT"] != nil { attackErr(standardError(result)) }
}

/// A file for a child's standard error, which the parent reads whatever the child's exit
/// status: `#expect(processExitsWith:)` returns no result, and so no standard error, when
/// the status is not the expected one.
func atkChildLog() -> String {
  FileManager.default.temporaryDirectory
    .appendingPathComponent("singlewriter-child-\(UUID().uuidString).log").path
}

/// In a child: sends everything written to standard error from now on, including the
/// runtime's own crash messages, to `path`.
func atkSendStandardError(to path: String) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
  guard fd >= 0 else { return }
  dup2(fd, STDERR_FILENO)
  close(fd)
}

/// In the parent: what the child wrote to `path`, which is then removed.
func atkTakeChildLog(_ path: String) -> String {
  defer { unlink(path) }
  return (try? String(contentsOfFile: path, encoding: .utf8)) ?? "(no log at \(path))"
}

/// In a child: starves the cooperative pool behind a task that holds the writer. `hold`
/// runs in a task, takes the writer (a checkout, a transaction, an access through a
/// proxy), and while holding it calls the closure it is given, which returns only once
/// as many tasks as the pool has threads have started `block`, a blocking wait for the
/// same container. The holder is then resumed on the pool only if a blocked wait lets go
/// of its thread: this returns when the holder ends, or never.
func atkStarvePool(
  holding hold:
    @escaping @Sendable (_ whileHeld: @escaping @Sendable () async -> Void) async
    -> Void,
  blocking block: @escaping @Sendable () -> Void
) async {
  let held = SharedFlag()
  let blockers = ProcessInfo.processInfo.activeProcessorCount
  let started = Counter()
  let holder = Task {
    await hold {
      held.set()
      while started.load() < blockers { try? await Task.sleep(nanoseconds: 1_000_000) }
    }
  }
  while !held.isSet { await Task.yield() }
  for _ in 0..<blockers {
    Task {
      started.add(1)
      block()
    }
  }
  await holder.value
}
