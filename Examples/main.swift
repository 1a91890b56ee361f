// Runs every walkthrough, or the ones named on the command line:
//   swift run Examples
//   swift run Examples seed

let walkthroughs: [(name: String, run: () -> Void)] = [
  ("seed", seedWalkthrough)
]

let requested = Set(CommandLine.arguments.dropFirst())
for walkthrough in walkthroughs where requested.isEmpty || requested.contains(walkthrough.name) {
  print("== \(walkthrough.name)")
  walkthrough.run()
  print()
}
