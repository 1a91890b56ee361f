// Finds the deepest queue that the article's recursive drain survives on the main
// thread's default stack. Each depth runs in a child process (a stack overflow kills
// it with SIGSEGV): doubling until one crashes, then bisecting to 1%.
//
//   swift run -c release --package-path Benchmarks ArticleDepthProbe
//   .build/release/ArticleDepthProbe run 50000   # one depth, in this process

import BenchmarkSupport
import Foundation

func stackLimit() -> String {
  var limit = rlimit()
  getrlimit(Int32(RLIMIT_STACK.rawValue), &limit)
  return limit.rlim_cur == rlim_t.max ? "unlimited" : "\(limit.rlim_cur / 1024) KiB"
}

/// Runs `depth` in a child process; true if it finished with the right count.
func survives(_ depth: Int) -> Bool {
  let child = Process()
  child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
  child.arguments = ["run", String(depth)]
  child.standardOutput = FileHandle.nullDevice
  child.standardError = FileHandle.nullDevice
  let start = Date()
  do { try child.run() } catch { fatalError("cannot start \(CommandLine.arguments[0]): \(error)") }
  child.waitUntilExit()
  let ok = child.terminationReason == .exit && child.terminationStatus == 0
  let how =
    ok
    ? "ok"
    : child.terminationReason == .uncaughtSignal
      ? "crashed (signal \(child.terminationStatus))" : "failed (exit \(child.terminationStatus))"
  print("  depth \(depth): \(how) in \(String(format: "%.1f", Date().timeIntervalSince(start))) s")
  return ok
}

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "run", let depth = Int(arguments[2]) {
  let count = runArticleQueue(depth: depth)
  exit(count == depth ? 0 : 1)
}

print("Article's recursive drain on the main thread; stack limit \(stackLimit())")
var good = 0
var bad = 1_024
while survives(bad) {
  good = bad
  bad *= 2
  if bad > 1 << 22 {
    print("no crash up to \(good)")
    exit(0)
  }
}
while bad - good > max(good / 100, 1) {
  let middle = (good + bad) / 2
  if survives(middle) { good = middle } else { bad = middle }
}
print("deepest surviving queue: \(good) (crashes at \(bad))")
