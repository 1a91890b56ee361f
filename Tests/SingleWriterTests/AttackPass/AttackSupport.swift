import Foundation
import Testing

@testable import SingleWriter

// Shared helpers of the attack pass. Every test that could hang runs in a child process
// with `attackWatchdog` (exit status 3, "WATCHDOG" on standard error).

/// The text a child wrote to standard error.
func atkStderr(_ result: ExitTest.Result?) -> String {
  result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
}

/// Sendable box for smuggling values between threads in hostile tests.
final class AtkBox<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value
  init(_ value: Value) { self.value = value }
  func with<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&value) } }
}

func atkThreadID() -> UInt { UInt(pthread_self()) }

struct AtkPair: Sendable, Equatable {
  var a = 0
  var b = 0
}

/// Blocks the calling thread (callable from async code on purpose).
func atkSleep(_ seconds: Double) { Thread.sleep(forTimeInterval: seconds) }

/// Queues a chain of `left + 1` writes, each queueing the next from its body.
func atkChain(_ a: ThreadSafeSingleWriter<Int>, _ left: Int, _ depth: AtkBox<Int>) {
  a.writeNext { proxy in
    proxy.write += 1
    depth.with { $0 += 1 }
    if left > 0 { atkChain(a, left - 1, depth) }
  }
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
  if ProcessInfo.processInfo.environment["ATK_EXPECT"] != nil { attackErr(atkStderr(result)) }
}
