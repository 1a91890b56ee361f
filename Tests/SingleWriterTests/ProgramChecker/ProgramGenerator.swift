/// Builds a random program from a seed. Each program has a theme that weights the
/// generator towards the combinations the promises are about, but the steps themselves
/// are picked at random.
struct ProgramGenerator {
  static let themes: [(String, Int)] = [
    ("random", 21), ("read-nesting", 12), ("closure-nesting", 8), ("access-nesting", 7),
    ("self-hold", 7), ("other-task-wait", 5), ("async-storm", 15), ("follow-up-storm", 6),
    ("consumers", 9), ("plain-actor", 8), ("backlog", 14),
    ("lock-order", 8), ("transaction", 12),
  ]

  var random: CheckerRandom
  let seed: UInt64

  init(seed: UInt64) {
    self.seed = seed
    random = CheckerRandom(seed: seed)
  }

  static func program(seed: UInt64) -> CheckedProgram {
    var generator = ProgramGenerator(seed: seed)
    return generator.generate()
  }

  mutating func generate() -> CheckedProgram {
    var roll = random.int(0...(Self.themes.map(\.1).reduce(0, +) - 1))
    var theme = Self.themes[0].0
    for (name, weight) in Self.themes {
      if roll < weight {
        theme = name
        break
      }
      roll -= weight
    }
    var program = CheckedProgram(
      seed: seed, theme: theme, flavor: .threadSafe, roots: [], consumers: [])
    let x: ContainerName = random.chance(50) ? .a : .b
    switch theme {
    case "read-nesting":
      program.roots.append(readNestingRoot(x))
      if random.chance(60) {
        // Another thread holds x's writer meanwhile.
        program.roots.insert(
          ProgramRoot(
            kind: .thread, startDelay: 0, cancelAfter: nil,
            steps: [.writer(x, .twoAccesses, [.sleep(random.int(20...60))])]), at: 0)
        program.roots[1].startDelay = 5
      }
      addRandomRoots(&program, 0...1)
    case "closure-nesting":
      program.roots.append(closureNestingRoot(x))
      addRandomRoots(&program, 0...2)
    case "access-nesting":
      let kind: RootKind = random.pick([.thread, .thread, .pool, .mainActor])
      let inner = random.pick([
        ProgramStep.withWriter(x, []), .withWriter(x, []), .tryWrite(x, []),
        .writeNext(x, .twoAccesses, []),
        .read(x),
      ])
      let outer: ProgramStep =
        kind == .thread || random.chance(40)
        ? .writer(x, .insideAccess, [inner]) : .checkout(x, .insideAccess, [inner])
      program.roots.append(ProgramRoot(kind: kind, startDelay: 0, cancelAfter: nil, steps: [outer]))
      addRandomRoots(&program, 0...1)
    case "self-hold":
      program.roots.append(selfHoldRoot(x))
      addRandomRoots(&program, 0...1)
    case "other-task-wait":
      let hold = random.int(1_150...1_400)
      let holdStep: ProgramStep =
        random.chance(50)
        ? .writer(x, .twoAccesses, [.sleep(hold)]) : .checkout(x, .twoAccesses, [.sleep(hold)])
      let wait: ProgramStep =
        random.chance(70) ? .awaitWrite(x, []) : .checkout(x, .twoAccesses, [])
      program.roots = [
        ProgramRoot(kind: .pool, startDelay: 0, cancelAfter: nil, steps: [holdStep]),
        ProgramRoot(
          kind: random.pick([.pool, .pool, .actor]), startDelay: random.int(20...80),
          cancelAfter: nil, steps: [wait]),
      ]
    case "async-storm":
      program.roots.append(
        ProgramRoot(
          kind: .thread, startDelay: 0, cancelAfter: nil,
          steps: [
            .storm(
              x, milliseconds: random.int(400...800), followUps: random.int(0...1),
              load: random.pick([1, 2, 2, 2]))
          ]))
      for _ in 0..<random.int(2...4) {
        var steps: [ProgramStep] = []
        for _ in 0..<random.int(60...150) {
          // Bodies of about 100 µs keep whoever serves busy past its millisecond with the
          // tasks alone, so that the next await to queue is chosen to take over.
          let body: [ProgramStep] = random.chance(60) ? [.work(random.int(60...120))] : []
          steps.append(random.chance(75) ? .awaitWrite(x, body) : .writeUnlessCancelled(x, body))
          if random.chance(10) { steps.append(.sleep(random.int(1...5))) }
        }
        program.roots.append(
          ProgramRoot(
            kind: random.pick([.pool, .pool, .actor, .mainActor]), startDelay: random.int(1...20),
            cancelAfter: random.chance(20) ? random.int(20...200) : nil, steps: steps))
      }
    case "follow-up-storm":
      var steps: [ProgramStep] = [
        .storm(
          x, milliseconds: random.int(300...600), followUps: random.int(2...3),
          load: random.chance(60) ? 1 : 0)
      ]
      for _ in 0..<random.int(3...8) {
        steps.append(.sleep(random.int(5...40)))
        steps.append(
          random.pick([
            .writer(x, .twoAccesses, [.sleep(random.int(1...5))]), .withWriter(x, []),
            .writeNext(x, .twoAccesses, []), .tryWrite(x, []),
          ]))
      }
      program.roots.append(
        ProgramRoot(kind: .thread, startDelay: 0, cancelAfter: nil, steps: steps))
      addRandomRoots(&program, 0...1)
    case "consumers":
      program.consumers = random.chance(70) ? [x] : [.a, .b]
      for _ in 0..<random.int(1...3) {
        let kind: RootKind = random.pick([.thread, .pool, .mainActor, .actor])
        var steps: [ProgramStep] = []
        for _ in 0..<random.int(3...10) {
          let pause = ProgramStep.sleep(random.int(1...4))
          steps.append(
            random.pick([
              kind.isTask ? .checkout(x, .twoAccesses, [pause]) : .writer(x, .twoAccesses, [pause]),
              .writer(x, .twoAccesses, [pause]), .writeNext(x, .keepHere, [pause]),
              .writeNext(x, .twoAccesses, [pause]), .writer(x, .handToThread, []),
              kind.isTask ? .awaitWrite(x, []) : .withWriter(x, []), .tryWrite(x, []),
            ]))
        }
        program.roots.append(
          ProgramRoot(kind: kind, startDelay: random.int(0...3), cancelAfter: nil, steps: steps))
      }
    case "plain-actor":
      var tasks: [[PlainStep]] = []
      for _ in 0..<random.int(2...4) {
        var steps: [PlainStep] = random.chance(50) ? [.holdAcrossAwait(milliseconds: 5)] : []
        for _ in 0..<random.int(2...8) {
          steps.append(
            random.pick([
              .holdAcrossAwait(milliseconds: random.int(1...10)),
              .holdAcrossAwait(milliseconds: random.int(1...10)), .read, .readClosure, .tryWrite,
              .writeNext, .yield,
            ]))
        }
        tasks.append(steps)
      }
      program.flavor = .plain(onMainActor: random.chance(40), tasks: tasks)
    case "backlog":
      backlogProgram(&program, x)
    case "lock-order":
      lockOrderProgram(&program)
    case "transaction":
      transactionProgram(&program, x)
    default:
      addRandomRoots(&program, 2...4)
      if random.chance(25) { program.consumers = [x] }
    }
    if let chance = Self.boundChances[theme], random.chance(chance) {
      program.bounds[random.chance(50) ? .a : .b] = smallBound()
    }
    sanitize(&program)
    keepBoundsSafe(&program)
    annotateBacklog(&program)
    return program
  }

  // MARK: Themed roots

  mutating func readNestingRoot(_ x: ContainerName) -> ProgramRoot {
    let write = random.pick([
      ProgramStep.withWriter(x, []), .withWriter(x, []), .tryWrite(x, []),
      .writeNext(x, .twoAccesses, []), .writer(x, .twoAccesses, []),
    ])
    var inner: [ProgramStep] = [write]
    if random.chance(60) { inner = [.readClosure(x.other, inner)] }
    if random.chance(25) { inner = [.readClosure(x, inner)] }
    let kind: RootKind = random.chance(75) ? .thread : random.pick([.pool, .mainActor, .actor])
    var steps: [ProgramStep] = [.readClosure(x, inner)]
    if random.chance(30) { steps.insert(.writer(x.other, .twoAccesses, [.read(x)]), at: 0) }
    return ProgramRoot(kind: kind, startDelay: 0, cancelAfter: nil, steps: steps)
  }

  mutating func closureNestingRoot(_ x: ContainerName) -> ProgramRoot {
    let kind: RootKind = random.pick([.thread, .thread, .pool, .actor])
    let inner = random.pick([
      ProgramStep.withWriter(x, []), .read(x), .tryWrite(x, []), .writeNext(x, .twoAccesses, []),
      .deinitCallback(x, .withWriter, target: x),
    ])
    var outer: [ProgramStep] = [
      .tryWrite(x, [inner]), .withWriter(x, [inner]), .writeNext(x, .twoAccesses, [inner]),
    ]
    if kind.isTask { outer.append(.awaitWrite(x, [inner])) }
    return ProgramRoot(kind: kind, startDelay: 0, cancelAfter: nil, steps: [random.pick(outer)])
  }

  mutating func selfHoldRoot(_ x: ContainerName) -> ProgramRoot {
    let kind: RootKind = random.pick([.thread, .thread, .mainActor, .mainActor, .pool, .actor])
    if kind == .thread {
      let hold = random.pick([
        ProgramStep.writer(x, .twoAccesses, [.withWriter(x, [])]),
        .writeNext(x, .keepHere, [.withWriter(x, [])]),
      ])
      return ProgramRoot(kind: kind, startDelay: 0, cancelAfter: nil, steps: [hold])
    }
    let wait: ProgramStep = random.chance(60) ? .awaitWrite(x, []) : .checkout(x, .twoAccesses, [])
    var body: [ProgramStep] = [wait]
    if random.chance(30) { body.insert(.sleep(random.int(1...3)), at: 0) }
    let hold: ProgramStep =
      random.chance(50) ? .writer(x, .twoAccesses, body) : .checkout(x, .twoAccesses, body)
    return ProgramRoot(kind: kind, startDelay: 0, cancelAfter: nil, steps: [hold])
  }

  // MARK: Random roots

  mutating func addRandomRoots(_ program: inout CheckedProgram, _ count: ClosedRange<Int>) {
    let probe = program.roots.isEmpty && random.chance(40)
    let crossing = program.roots.contains { root in root.steps.contains(where: Self.crosses) }
    for index in 0..<random.int(count) {
      let kind: RootKind = random.pick([.thread, .thread, .pool, .actor, .mainActor])
      var context = GeneratorContext(
        isAsync: kind.isTask, inTask: kind.isTask, mayCross: probe && index == 0 && !crossing)
      context.crossFree = crossing
      program.roots.append(
        ProgramRoot(
          kind: kind, startDelay: random.chance(50) ? random.int(0...5) : 0,
          cancelAfter: kind.isTask && random.chance(15) ? random.int(1...30) : nil,
          steps: steps(random.int(1...4), context)))
    }
  }

  mutating func steps(_ count: Int, _ context: GeneratorContext) -> [ProgramStep] {
    (0..<count).map { _ in step(context) }
  }

  mutating func nested(_ context: GeneratorContext) -> [ProgramStep] {
    guard context.depth < 3, random.chance(55) else { return [] }
    return steps(random.int(1...2), context)
  }

  mutating func step(_ context: GeneratorContext) -> ProgramStep {
    let x = random.pick(context.allowed)
    var choices = [
      "read", "readClosure", "tryWrite", "withWriter", "writeNext", "writer", "deinit",
      "sleep", "produce", "transaction",
    ]
    if context.isAsync {
      choices += ["checkout", "awaitWrite", "awaitWrite", "writeUnlessCancelled", "drained"]
    }
    switch random.pick(choices) {
    case "read": return .read(x)
    case "readClosure": return .readClosure(x, nested(context.entering(x)))
    case "tryWrite": return .tryWrite(x, nested(context.entering(x)))
    case "withWriter": return .withWriter(x, nested(context.entering(x)))
    case "writeNext":
      let use = random.pick([
        ProxyUse.twoAccesses, .insideAccess, .handToThread, .handToTask, .keepHere,
      ])
      return .writeNext(x, use, nested(context.entering(x, queued: use != .keepHere)))
    case "writer":
      let use = random.pick([
        ProxyUse.twoAccesses, .twoAccesses, .insideAccess, .handToThread, .handToTask,
      ])
      return .writer(
        x, use, nested(context.entering(x, sync: use == .insideAccess || !context.isAsync)))
    case "deinit":
      let target = context.queuedBody || !context.mayCross ? x : random.pick([x, x.other])
      return .deinitCallback(x, random.pick([.writeNext, .read, .withWriter]), target: target)
    case "checkout":
      let use = random.pick([ProxyUse.twoAccesses, .insideAccess, .handToTask])
      return .checkout(x, use, nested(context.entering(x, sync: use == .insideAccess)))
    case "awaitWrite": return .awaitWrite(x, nested(context.entering(x, queued: true)))
    case "writeUnlessCancelled":
      return .writeUnlessCancelled(x, nested(context.entering(x, queued: true)))
    case "produce": return .produce(x, count: random.int(1...4), expect: nil)
    case "transaction": return transactionStep(x, context)
    case "drained":
      // Only outside calls on the other container: a wait nested the generator's own way.
      guard context.enclosing.isSubset(of: [x]) else { return .sleep(random.int(1...3)) }
      return .drained(x)
    default: return .sleep(random.int(1...3))
    }
  }

  /// Whether a step nests a call on one container inside a call on the other.
  static func crosses(_ step: ProgramStep) -> Bool {
    func walk(_ step: ProgramStep, _ outer: Set<ContainerName>) -> Bool {
      switch step {
      case .read(let x), .produce(let x, _, _), .drained(let x), .transaction(let x, _):
        return outer.contains(x.other)
      case .sleep, .work, .storm, .countQueued: return false
      case .deinitCallback(let x, _, let target): return outer.contains(x.other) || target != x
      case .readClosure(let x, let body), .tryWrite(let x, let body), .withWriter(let x, let body),
        .awaitWrite(let x, let body), .writeUnlessCancelled(let x, let body),
        .writeNext(let x, _, let body), .writer(let x, _, let body), .checkout(let x, _, let body):
        if outer.contains(x.other) { return true }
        return body.contains { walk($0, outer.union([x])) }
      }
    }
    return walk(step, [])
  }

  /// Blocking waits on a container that a task holds across an `await` could take every
  /// thread of the cooperative pool (the documented caveat): a task's `withWriter` on
  /// such a container becomes `tryWrite`.
  func sanitize(_ program: inout CheckedProgram) {
    var asyncHeld: Set<ContainerName> = []
    func scan(_ step: ProgramStep, async: Bool) {
      switch step {
      case .writer(let x, let use, let body), .checkout(let x, let use, let body),
        .writeNext(let x, let use, let body):
        if use == .handToTask || (async && body.contains(where: Self.sleeps)) {
          asyncHeld.insert(x)
        }
        body.forEach { scan($0, async: async && use != .insideAccess) }
      case .readClosure(_, let body), .tryWrite(_, let body), .withWriter(_, let body),
        .awaitWrite(_, let body), .writeUnlessCancelled(_, let body):
        body.forEach { scan($0, async: false) }
      case .transaction(let x, let form) where form.isAsync:
        // Holds the writer across its body's suspensions.
        asyncHeld.insert(x)
      default: break
      }
    }
    for root in program.roots { root.steps.forEach { scan($0, async: root.kind.isTask) } }
    guard !asyncHeld.isEmpty else { return }
    func fix(_ step: ProgramStep) -> ProgramStep {
      switch step {
      case .withWriter(let x, let body):
        return asyncHeld.contains(x) ? .tryWrite(x, body.map(fix)) : .withWriter(x, body.map(fix))
      case .readClosure(let x, let body): return .readClosure(x, body.map(fix))
      case .tryWrite(let x, let body): return .tryWrite(x, body.map(fix))
      case .awaitWrite(let x, let body): return .awaitWrite(x, body.map(fix))
      case .writeUnlessCancelled(let x, let body): return .writeUnlessCancelled(x, body.map(fix))
      case .writeNext(let x, let use, let body): return .writeNext(x, use, body.map(fix))
      case .writer(let x, let use, let body): return .writer(x, use, body.map(fix))
      case .checkout(let x, let use, let body): return .checkout(x, use, body.map(fix))
      case .transaction(let x, let form) where !form.isAsync && asyncHeld.contains(x):
        return .tryWrite(x, [])
      case .deinitCallback(let x, .withWriter, let target) where asyncHeld.contains(target):
        return .deinitCallback(x, .writeNext, target: target)
      default: return step
      }
    }
    for index in program.roots.indices where program.roots[index].kind.isTask {
      program.roots[index].steps = program.roots[index].steps.map(fix)
    }
  }

  static func sleeps(_ step: ProgramStep) -> Bool {
    if case .sleep = step { return true }
    return false
  }
}
