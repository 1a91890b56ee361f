import Foundation

/// The checker's budget, from the environment:
/// - `SINGLEWRITER_CHECKER_SEED=<n>` replays program n alone.
/// - `SINGLEWRITER_CHECKER_PROGRAMS=<n>` runs n programs (the CI budget otherwise).
/// - `SINGLEWRITER_CHECKER_FIRST=<n>` starts at program n (1 otherwise).
/// - `SINGLEWRITER_CHECKER_BATCH=<n>` runs up to n completing programs per child.
/// - `SINGLEWRITER_CHECKER_THEME=<name>` keeps only the programs of that theme (see
///   `ProgramGenerator.themes`), n of them.
struct CheckerSettings {
  static let ciPrograms = 200

  var seeds: [UInt64]
  var batch: Int
  var replay: Bool

  static var current: CheckerSettings {
    let environment = ProcessInfo.processInfo.environment
    let batch = environment["SINGLEWRITER_CHECKER_BATCH"].flatMap { Int($0) } ?? 25
    if let seed = environment["SINGLEWRITER_CHECKER_SEED"].flatMap({ UInt64($0) }) {
      return CheckerSettings(seeds: [seed], batch: 1, replay: true)
    }
    let count =
      environment["SINGLEWRITER_CHECKER_PROGRAMS"].flatMap { UInt64($0) } ?? UInt64(ciPrograms)
    let first = environment["SINGLEWRITER_CHECKER_FIRST"].flatMap { UInt64($0) } ?? 1
    var seeds = Array(first..<(first + count))
    if let theme = environment["SINGLEWRITER_CHECKER_THEME"] {
      seeds = []
      var seed = first
      while seeds.count < count, seed < first + 100 * count {
        if ProgramGenerator.program(seed: seed).theme == theme { seeds.append(seed) }
        seed += 1
      }
    }
    return CheckerSettings(seeds: seeds, batch: max(1, batch), replay: false)
  }
}
