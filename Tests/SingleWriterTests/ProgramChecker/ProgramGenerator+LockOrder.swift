/// Lock order (issue 35): programs whose roots run one after another, each taking the two
/// containers nested, in one global order or with one inversion, through every way of
/// holding a container (closure writes, a body run in place or kept, `writer`,
/// `checkout()`, an `await write` body) and every call that waits (`transaction` too); and roots that end while
/// a proxy they took lives on, followed at once by a root that waits for the other
/// container (its thread or task may be given the ended one's address). Debug builds'
/// lock-order checking must report nothing for one global order and exactly one inversion
/// otherwise (`expectedLockReports`).
extension ProgramGenerator {
  mutating func lockOrderProgram(_ program: inout CheckedProgram) {
    program.sequential = true
    let first: ContainerName = random.chance(50) ? .a : .b
    let inverted = random.chance(50)
    let count = random.int(2...4)
    let invertedRoot = inverted ? random.int(0...(count - 1)) : -1
    for index in 0..<count {
      let kind: RootKind = random.pick([.thread, .thread, .pool, .pool, .actor, .mainActor])
      if random.chance(30) {
        // A root that takes a proxy and ends while it lives on (handed to a thread or
        // task that releases it 2 ms later), then one of the same kind that waits for
        // the other container: given the ended one's address, it is still not the holder.
        let held = random.chance(50) ? first : first.other
        let use: ProxyUse = random.chance(50) ? .handToThread : .handToTask
        let take: ProgramStep =
          kind.isTask && random.chance(50)
          ? .checkout(held, use, []) : .writer(held, use, [])
        program.roots.append(
          ProgramRoot(kind: kind, startDelay: 3, cancelAfter: nil, steps: [take]))
        program.roots.append(
          ProgramRoot(
            kind: kind, startDelay: 0, cancelAfter: nil,
            steps: [.withWriter(held.other, [])]))
      }
      var steps: [ProgramStep] = []
      for _ in 0..<random.int(1...2) {
        let (outer, inner) =
          index == invertedRoot && steps.isEmpty ? (first.other, first) : (first, first.other)
        steps.append(nestedHold(outer, waitingFor: inner, inTask: kind.isTask))
      }
      // Starts once the proxies handed on by the root before it have surely been let go.
      program.roots.append(ProgramRoot(kind: kind, startDelay: 3, cancelAfter: nil, steps: steps))
    }
  }

  /// A step that holds `x` and, while holding it, waits for `y`.
  mutating func nestedHold(
    _ x: ContainerName, waitingFor y: ContainerName, inTask: Bool
  ) -> ProgramStep {
    // Inside a closure, or a body lent or kept in synchronous code, only `withWriter` waits.
    let syncWait: [ProgramStep] = [
      random.chance(75) ? .withWriter(y, []) : .transaction(y, transactionForm(async: false))
    ]
    var holds: [ProgramStep] = [
      .withWriter(x, syncWait), .tryWrite(x, syncWait), .writeNext(x, .twoAccesses, syncWait),
      .writeNext(x, .keepHere, syncWait), .writer(x, .twoAccesses, syncWait),
    ]
    if inTask {
      // A proxy held across an `await`: the task holds it while it suspends.
      let asyncWait = random.pick([
        ProgramStep.withWriter(y, []), .awaitWrite(y, []), .checkout(y, .twoAccesses, []),
        .transaction(y, transactionForm(async: true)),
      ])
      holds += [
        .writer(x, .twoAccesses, [asyncWait]), .checkout(x, .twoAccesses, [asyncWait]),
        .awaitWrite(x, syncWait),
      ]
    }
    return random.pick(holds)
  }

  /// How many lock-order inversions debug builds report for a lock-order program: one if
  /// some step holds each container while waiting for the other, none otherwise. Every
  /// hold there holds while its nested wait waits: the roots run one at a time, so no
  /// write finds its container busy but behind a proxy handed on, which is let go before
  /// the next nested root starts.
  static func expectedLockReports(_ program: CheckedProgram) -> Int {
    var orders: Set<[ContainerName]> = []
    func visit(_ step: ProgramStep, holding: [ContainerName]) {
      switch step {
      case .withWriter(let x, let body), .awaitWrite(let x, let body):
        for held in holding where held != x { orders.insert([held, x]) }
        for inner in body { visit(inner, holding: holding + [x]) }
      case .transaction(let x, _):
        for held in holding where held != x { orders.insert([held, x]) }
      case .checkout(let x, _, let body):
        for held in holding where held != x { orders.insert([held, x]) }
        for inner in body { visit(inner, holding: holding + [x]) }
      case .tryWrite(let x, let body), .writeNext(let x, _, let body), .writer(let x, _, let body):
        for inner in body { visit(inner, holding: holding + [x]) }
      default: break
      }
    }
    for root in program.roots { for step in root.steps { visit(step, holding: []) } }
    return orders.contains([.a, .b]) && orders.contains([.b, .a]) ? 1 : 0
  }
}
