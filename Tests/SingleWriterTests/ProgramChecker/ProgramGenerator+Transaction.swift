/// Transactions (issue 36): no reader, `changes()` element or write body may see a value
/// that no commit published (a draft's marker, or anything a throwing transaction wrote),
/// and commits are writes like the others: none lost or run twice, in turn with the queue.
extension ProgramGenerator {
  /// Roots that run transactions (synchronous on threads, async in tasks, some throwing,
  /// some pausing with the writer held), readers that read all along, a `changes()`
  /// consumer, and writers queueing behind the transactions.
  mutating func transactionProgram(_ program: inout CheckedProgram, _ x: ContainerName) {
    program.consumers = [x]
    for _ in 0..<random.int(1...2) {
      let kind: RootKind = random.pick([.thread, .thread, .pool, .actor, .mainActor])
      var steps: [ProgramStep] = []
      for _ in 0..<random.int(3...8) {
        steps.append(.transaction(x, transactionForm(async: kind.isTask)))
        if random.chance(30) { steps.append(.produce(x, count: random.int(1...3), expect: nil)) }
        if random.chance(30) { steps.append(.sleep(random.int(1...3))) }
      }
      program.roots.append(
        ProgramRoot(kind: kind, startDelay: random.int(0...2), cancelAfter: nil, steps: steps))
    }
    for _ in 0..<random.int(1...2) {
      var steps: [ProgramStep] = []
      for _ in 0..<random.int(30...80) {
        steps.append(random.chance(70) ? .read(x) : .readClosure(x, []))
        steps.append(.work(random.int(20...200)))
      }
      program.roots.append(
        ProgramRoot(
          kind: random.pick([.thread, .pool, .mainActor]), startDelay: 0, cancelAfter: nil,
          steps: steps))
    }
    let kind: RootKind = random.pick([.thread, .pool, .actor])
    var writes: [ProgramStep] = []
    for _ in 0..<random.int(4...10) {
      writes.append(
        random.pick([
          .produce(x, count: random.int(1...4), expect: nil), .writeNext(x, .twoAccesses, []),
          kind.isTask ? .awaitWrite(x, []) : .withWriter(x, []),
          .writer(x, .twoAccesses, [.sleep(1)]),
        ]))
      writes.append(.sleep(random.int(1...4)))
    }
    program.roots.append(
      ProgramRoot(kind: kind, startDelay: random.int(1...5), cancelAfter: nil, steps: writes))
  }

  mutating func transactionForm(async: Bool) -> TransactionForm {
    TransactionForm(
      isAsync: async && random.chance(80), throwing: random.chance(30),
      readsInside: random.chance(50), pause: random.chance(50) ? random.int(1...3) : 0)
  }

  /// A transaction among random steps: on a container no enclosing call holds or reads
  /// (inside them, it waits for itself, a misuse the other steps cover).
  mutating func transactionStep(_ x: ContainerName, _ context: GeneratorContext) -> ProgramStep {
    guard !context.enclosing.contains(x) else { return .sleep(random.int(1...3)) }
    return .transaction(x, transactionForm(async: context.isAsync))
  }
}
