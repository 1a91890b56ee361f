// What a transaction's copy costs, uncontended: one field of a small struct, and one element
// of a 1M-element array (whose buffer the body's first write copies whole), each against
// `withWriter`, which writes in place.

import BenchmarkSupport
import Foundation
import SingleWriter

/// Nanoseconds per call of `body`, the median of `rounds` runs of `count` calls.
func nanosecondsPerCall(count: Int, rounds: Int = 7, _ body: () -> Void) -> Double {
  var samples: [Double] = []
  for _ in 0..<rounds {
    let start = now()
    for _ in 0..<count { body() }
    samples.append(Double(now() - start) / Double(count))
  }
  return samples.median()!
}

func runCost(_ options: Options) -> CaseResult {
  let small = ThreadSafeSingleWriter(value: State())
  let smallWithWriter = nanosecondsPerCall(count: 1_000_000) { small.withWriter { $0.x += 1 } }
  let smallTransaction = nanosecondsPerCall(count: 1_000_000) { small.transaction { $0.x += 1 } }
  let large = ThreadSafeSingleWriter(value: [Int](repeating: 0, count: 1_000_000))
  var index = 0
  let largeWithWriter = nanosecondsPerCall(count: 200) {
    index = (index &+ 7919) % 1_000_000
    large.withWriter { $0[index] += 1 }
  }
  let largeTransaction = nanosecondsPerCall(count: 200) {
    index = (index &+ 7919) % 1_000_000
    large.transaction { $0[index] += 1 }
  }
  sink(small.read.x &+ large.read { $0[index] })

  print("## Cost of a transaction's copy, uncontended\n")
  print(
    "Load average \(Machine.loadAverage). Median of 7 runs; release. `withWriter` writes in "
      + "place, readers waiting for it; `transaction` writes a copy, which the commit moves in.\n")
  let rows: [(String, Double, Double)] = [
    ("one field of a small struct (16 bytes)", smallWithWriter, smallTransaction),
    ("one element of a 1M-element `[Int]` (8 MB, copied once)", largeWithWriter, largeTransaction),
  ]
  MarkdownTable(
    ["Write", "`withWriter`", "`transaction`", "ratio"], ["---", "---:", "---:", "---:"],
    rows.map { [$0.0, Format.duration($0.1), Format.duration($0.2), Format.ratio($0.2 / $0.1)] }
  ).print()
  let ratio = smallTransaction / smallWithWriter
  let pass = ratio <= 2
  print(
    "\nGoal (issue 36): an uncontended one-field transaction ≤ 2x `withWriter`: "
      + "\(Format.ratio(ratio)), \(pass ? "PASS" : "FAIL").\n")
  return CaseResult(
    json: [
      "smallWithWriterNs": smallWithWriter, "smallTransactionNs": smallTransaction,
      "largeWithWriterNs": largeWithWriter, "largeTransactionNs": largeTransaction,
      "smallRatio": ratio, "goalPass": pass,
    ],
    goalsPass: pass, lost: false)
}
