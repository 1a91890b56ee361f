// Runs every walkthrough, or the ones named on the command line:
//   swift run Examples
//   swift run Examples seed
//   swift run Examples --help    # lists the sections

import Foundation

let walkthroughs: [(name: String, run: () async -> Void)] = [
  ("seed", seedWalkthrough),
  ("thread-safe", threadSafeWalkthrough),
  ("async", asyncWalkthrough),
  ("transaction", transactionWalkthrough),
  ("observation", observationWalkthrough),
  ("race-detector", raceDetectorWalkthrough),
  ("confined", confinedWalkthrough),
  ("reentrant-mutex", reentrantMutexWalkthrough),
  ("barrier-store", barrierStoreWalkthrough),
  ("persistence", persistenceWalkthrough),
  ("doc-articles", docArticlesWalkthrough),
]

let usage = """
  usage: swift run Examples [section ...]
  Runs every section, or the ones named. Sections:
  \(walkthroughs.map { "  \($0.name)" }.joined(separator: "\n"))
  """

let arguments = CommandLine.arguments.dropFirst()
if arguments.contains(where: { ["--help", "-h", "help"].contains($0) }) {
  print(usage)
  exit(0)
}
let unknown = arguments.filter { name in !walkthroughs.contains { $0.name == name } }
if !unknown.isEmpty {
  // A typo must not look like a run that passed: name it, list the sections, and fail.
  FileHandle.standardError.write(
    Data("Examples: no section named \(unknown.joined(separator: ", "))\n\(usage)\n".utf8))
  exit(2)
}
let requested = Set(arguments)
for walkthrough in walkthroughs where requested.isEmpty || requested.contains(walkthrough.name) {
  print("== \(walkthrough.name)")
  await walkthrough.run()
  print()
}
