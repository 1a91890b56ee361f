// Runs one path of the Write/Read suites in a loop, for profilers:
//
//   swift build -c release --package-path Benchmarks --product Profile
//   valgrind --tool=callgrind Benchmarks/.build/release/Profile checkout 100000
//
// Without valgrind it also prints ns/op from ContinuousClock, a cross-check of the
// package-benchmark figures free of its malloc interposer.

import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3, let body = cases[arguments[1]], let n = Int(arguments[2]) else {
  print("usage: Profile <\(cases.keys.sorted().joined(separator: "|"))> <iterations>")
  exit(2)
}
let clock = ContinuousClock()
let elapsed = clock.measure { body(n) }
let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
print("\(arguments[1]): \(String(format: "%.2f", ns / Double(max(n, 1)))) ns/op over \(n)")
