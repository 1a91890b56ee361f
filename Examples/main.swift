// Runs every walkthrough, or the ones named on the command line:
//   swift run Examples
//   swift run Examples seed

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
  ("doc-articles", docArticlesWalkthrough),
]

let requested = Set(CommandLine.arguments.dropFirst())
for walkthrough in walkthroughs where requested.isEmpty || requested.contains(walkthrough.name) {
  print("== \(walkthrough.name)")
  await walkthrough.run()
  print()
}
