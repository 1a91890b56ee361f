/// The backlog (issue 31): programs that queue behind held proxies and check `queuedWrites`,
/// await `drained()`, and run on bounded containers (`init(value:maxQueuedWrites:)`).
extension ProgramGenerator {
  /// How often each theme bounds one of its containers (the backlog theme picks its own).
  static let boundChances: [String: Int] = [
    "random": 25, "read-nesting": 20, "closure-nesting": 35, "access-nesting": 25,
    "self-hold": 25, "other-task-wait": 20, "async-storm": 20, "follow-up-storm": 35,
    "consumers": 30,
  ]

  mutating func smallBound() -> Int { random.pick([1, 1, 2, 2, 4, 4, 8]) }

  // MARK: The backlog theme

  mutating func backlogProgram(_ program: inout CheckedProgram, _ x: ContainerName) {
    // A holder task's writes from a `Task.immediate` it starts queue past the bound too.
    program.inlineProducers = random.chance(30)
    let shape = random.int(0...99)
    if shape < 25 {
      exactBacklog(&program, x)
    } else if shape < 62 {
      boundedProducers(&program, x)
    } else if shape < 92 {
      drainingTasks(&program, x)
    } else {
      drainedBehindItsOwnProxy(&program, x)
    }
  }

  /// One root queues behind its own proxy on a container no other root writes, so that
  /// `queuedWrites` is known exactly at each point (see `annotateBacklog`); the holder's
  /// writes queue past a bound.
  mutating func exactBacklog(_ program: inout CheckedProgram, _ x: ContainerName) {
    if random.chance(60) { program.bounds[x] = random.pick([1, 2, 4]) }
    let kind: RootKind = random.pick([.thread, .thread, .pool, .actor, .mainActor])
    var steps: [ProgramStep] = []
    for _ in 0..<random.int(1...2) {
      let use: ProxyUse = random.pick([.twoAccesses, .twoAccesses, .insideAccess])
      var body: [ProgramStep] = [.produce(x, count: random.int(1...12), expect: nil)]
      if random.chance(50) { body.append(.countQueued(x, expect: nil)) }
      if random.chance(40) { body.append(.sleep(random.int(1...2))) }
      if random.chance(50) { body.append(.produce(x, count: random.int(1...6), expect: nil)) }
      body.append(.countQueued(x, expect: nil))
      steps.append(
        kind.isTask && random.chance(50) ? .checkout(x, use, body) : .writer(x, use, body))
      steps.append(.countQueued(x, expect: nil))
      if random.chance(50) { steps.append(.produce(x, count: random.int(1...5), expect: nil)) }
      if random.chance(40) {
        // The holder of a closure write, or of a body's lent proxy, queues past the bound.
        steps.append(
          random.pick([
            .withWriter(x, [.produce(x, count: random.int(2...6), expect: nil)]),
            .writeNext(x, .twoAccesses, [.produce(x, count: random.int(1...4), expect: nil)]),
            .tryWrite(x, [.produce(x, count: random.int(1...4), expect: nil)]),
            .writeNext(x, .keepHere, [.produce(x, count: random.int(1...4), expect: nil)]),
          ]))
        steps.append(.countQueued(x, expect: nil))
      }
      if kind.isTask && random.chance(50) { steps.append(.drained(x)) }
    }
    program.roots.append(ProgramRoot(kind: kind, startDelay: 0, cancelAfter: nil, steps: steps))
    if random.chance(50) {
      // Meanwhile a thread keeps the other container busy.
      let y = x.other
      program.roots.append(
        ProgramRoot(
          kind: .thread, startDelay: random.int(0...2), cancelAfter: nil,
          steps: [
            .writer(y, .twoAccesses, [.sleep(random.int(1...4))]),
            .produce(y, count: random.int(1...8), expect: nil),
          ]))
    }
  }

  /// A thread holds a bounded container's writer again and again while other threads (and
  /// perhaps tasks) queue on it: each waits for room, and the backlog never passes the
  /// bound unless a holder's writes queue past it.
  mutating func boundedProducers(_ program: inout CheckedProgram, _ x: ContainerName) {
    program.bounds[x] = smallBound()
    var hold: [ProgramStep] = []
    for _ in 0..<random.int(2...4) {
      var body: [ProgramStep] = [.sleep(random.int(3...15))]
      if random.chance(30) { body.append(.countQueued(x, expect: nil)) }
      hold.append(.writer(x, .twoAccesses, body))
      hold.append(.sleep(random.int(1...4)))
    }
    program.roots.append(ProgramRoot(kind: .thread, startDelay: 0, cancelAfter: nil, steps: hold))
    // Several producers at once: the more wake together for room, the likelier two race
    // for the last place, which the bound's check under the hand-off's lock must settle.
    for _ in 0..<random.int(2...5) {
      let kind: RootKind =
        random.chance(75) ? .thread : random.pick([.pool, .actor, .mainActor])
      var steps: [ProgramStep] = []
      for _ in 0..<random.int(3...10) {
        steps.append(.produce(x, count: random.int(1...10), expect: nil))
        if random.chance(30) { steps.append(.sleep(random.int(1...3))) }
        if kind.isTask && random.chance(25) { steps.append(.drained(x)) }
      }
      program.roots.append(
        ProgramRoot(kind: kind, startDelay: random.int(0...3), cancelAfter: nil, steps: steps))
    }
    if random.chance(35) {
      // Writes from the checkout's holder, or from inside a read, queue past the bound.
      var steps: [ProgramStep] = []
      for _ in 0..<random.int(1...3) {
        steps.append(
          random.pick([
            .withWriter(x, [.produce(x, count: random.int(2...6), expect: nil)]),
            .writeNext(x, .twoAccesses, [.produce(x, count: random.int(1...4), expect: nil)]),
            .writer(x, .twoAccesses, [.produce(x, count: random.int(3...8), expect: nil)]),
            .writeNext(x, .keepHere, [.produce(x, count: random.int(1...3), expect: nil)]),
            .tryWrite(x, [.produce(x, count: random.int(1...4), expect: nil)]),
            .readClosure(x, [.produce(x, count: random.int(1...3), expect: nil)]),
          ]))
      }
      program.roots.append(
        ProgramRoot(kind: .thread, startDelay: 2, cancelAfter: nil, steps: steps))
    }
    if random.chance(25) {
      program.roots.append(
        ProgramRoot(
          kind: .thread, startDelay: 0, cancelAfter: nil,
          steps: [.storm(x, milliseconds: random.int(80...200), followUps: 0, load: 0)]))
    }
    if random.chance(20) { program.consumers = [x] }
  }

  /// Tasks queue writes, then `await drained()` and find every one of them in the value,
  /// while a thread or a storm keeps the container busy.
  mutating func drainingTasks(_ program: inout CheckedProgram, _ x: ContainerName) {
    if random.chance(50) { program.bounds[x] = random.pick([1, 2, 4, 16]) }
    if random.chance(70) {
      var hold: [ProgramStep] = []
      for _ in 0..<random.int(2...5) {
        hold.append(.writer(x, .twoAccesses, [.sleep(random.int(2...10))]))
        hold.append(.sleep(random.int(1...3)))
      }
      program.roots.append(
        ProgramRoot(kind: .thread, startDelay: 0, cancelAfter: nil, steps: hold))
    } else {
      program.roots.append(
        ProgramRoot(
          kind: .thread, startDelay: 0, cancelAfter: nil,
          steps: [
            .storm(x, milliseconds: random.int(80...200), followUps: random.int(0...1), load: 0)
          ]))
    }
    for _ in 0..<random.int(2...3) {
      var steps: [ProgramStep] = []
      for _ in 0..<random.int(2...4) {
        steps.append(.produce(x, count: random.int(1...8), expect: nil))
        if random.chance(20) { steps.append(.awaitWrite(x, [])) }
        if random.chance(30) { steps.append(.sleep(random.int(1...3))) }
        steps.append(.drained(x))
      }
      program.roots.append(
        ProgramRoot(
          kind: random.pick([.pool, .pool, .actor, .mainActor]), startDelay: random.int(0...3),
          cancelAfter: nil, steps: steps))
    }
    if random.chance(30) {
      program.roots.append(
        ProgramRoot(
          kind: .thread, startDelay: random.int(0...3), cancelAfter: nil,
          steps: (0..<random.int(2...5)).map { _ in
            .produce(x, count: random.int(1...8), expect: nil)
          }))
    }
  }

  /// A task calls `drained()` while it holds a proxy it took, writes queued behind it:
  /// the documented warning. Or it handed that proxy to a helper first, which still holds
  /// it.
  mutating func drainedBehindItsOwnProxy(_ program: inout CheckedProgram, _ x: ContainerName) {
    if random.chance(40) { program.bounds[x] = random.pick([1, 2]) }
    let kind: RootKind = random.pick([.pool, .actor, .mainActor])
    let produce = ProgramStep.produce(x, count: random.int(1...3), expect: nil)
    let steps: [ProgramStep]
    switch random.int(0...3) {
    case 0: steps = [.checkout(x, .twoAccesses, [produce, .drained(x)])]
    case 1: steps = [.writer(x, .twoAccesses, [produce, .sleep(1), .drained(x)])]
    case 2:
      steps = [.writer(x, random.pick([.handToThread, .handToTask]), [produce]), .drained(x)]
    default:
      steps = [.checkout(x, .twoAccesses, [.drained(x)]), .produce(x, count: 2, expect: nil)]
    }
    program.roots.append(ProgramRoot(kind: kind, startDelay: 0, cancelAfter: nil, steps: steps))
  }

  // MARK: Keeping bounded programs free of real deadlocks

  /// Drops a bound where a `writeNext` waiting for room could wait forever for reasons of
  /// the program's own making, as a `withWriter` could: a cycle through the other
  /// container (a call on A nested in a call on B, the order the generator otherwise
  /// never uses), or every thread of the cooperative pool (or the main thread) waiting for
  /// room that only a suspended task holding a writer can make.
  func keepBoundsSafe(_ program: inout CheckedProgram) {
    guard !program.bounds.isEmpty else { return }
    if program.roots.contains(where: { $0.steps.contains { Self.nestsAInsideB($0) } }) {
      program.bounds = [:]
      return
    }
    var holders: Set<Int> = []
    var helperTask = false
    var taskWrites: [ContainerName: Set<Int>] = [:]
    for (index, root) in program.roots.enumerated() {
      for step in root.steps {
        if root.kind.isTask && Self.holdsAcrossSuspension(step) { holders.insert(index) }
        if Self.handsToTask(step) { helperTask = true }
        for x in ContainerName.allCases where root.kind.isTask && Self.writesNext(step, x) {
          taskWrites[x, default: []].insert(index)
        }
      }
    }
    guard helperTask || !holders.isEmpty else { return }
    for x in program.bounds.keys {
      let writers = taskWrites[x] ?? []
      if writers.isEmpty { continue }
      if helperTask || holders.count > 1 || !writers.isSubset(of: holders) {
        program.bounds[x] = nil
      }
    }
  }

  /// Whether `step` nests a call on A (or a `deinit` that may call A) inside a call on B.
  static func nestsAInsideB(_ step: ProgramStep) -> Bool {
    func walk(_ step: ProgramStep, _ insideB: Bool) -> Bool {
      switch step {
      case .read(let x), .produce(let x, _, _), .drained(let x), .transaction(let x, _):
        return insideB && x == .a
      case .countQueued, .sleep, .work, .storm: return false
      case .deinitCallback(let x, _, let target):
        return (x == .b && target == .a) || (insideB && (x == .a || target == .a))
      case .readClosure(let x, let body), .tryWrite(let x, let body), .withWriter(let x, let body),
        .awaitWrite(let x, let body), .writeUnlessCancelled(let x, let body),
        .writeNext(let x, _, let body), .writer(let x, _, let body), .checkout(let x, _, let body):
        if insideB && x == .a { return true }
        return body.contains { walk($0, insideB || x == .b) }
      }
    }
    return walk(step, false)
  }

  /// Whether a task running `step` may hold a writer while it is suspended.
  static func holdsAcrossSuspension(_ step: ProgramStep) -> Bool {
    switch step {
    case .writer(_, let use, let body), .checkout(_, let use, let body):
      guard use != .insideAccess else { return false }
      return !body.isEmpty || use == .handToTask
    default: return false
    }
  }

  /// Whether `step` hands a proxy to a helper task, anywhere inside it.
  static func handsToTask(_ step: ProgramStep) -> Bool {
    switch step {
    case .writer(_, let use, let body), .checkout(_, let use, let body),
      .writeNext(_, let use, let body):
      return use == .handToTask || body.contains(where: handsToTask)
    case .readClosure(_, let body), .tryWrite(_, let body), .withWriter(_, let body),
      .awaitWrite(_, let body), .writeUnlessCancelled(_, let body):
      return body.contains(where: handsToTask)
    default: return false
    }
  }

  /// Whether `step` may call `writeNext` on x, anywhere inside it (or in a `deinit`).
  static func writesNext(_ step: ProgramStep, _ x: ContainerName) -> Bool {
    switch step {
    case .produce(let y, _, _): return y == x
    case .deinitCallback(let y, let call, let target):
      return y == x || (call == .writeNext && target == x)
    case .storm(let y, _, _, _): return y == x
    case .writeNext(let y, _, let body):
      return y == x || body.contains { writesNext($0, x) }
    case .readClosure(_, let body), .tryWrite(_, let body), .withWriter(_, let body),
      .awaitWrite(_, let body), .writeUnlessCancelled(_, let body), .writer(_, _, let body),
      .checkout(_, _, let body):
      return body.contains { writesNext($0, x) }
    case .read, .sleep, .work, .drained, .countQueued, .transaction: return false
    }
  }

  // MARK: Exact counts

  /// Fills in the `queuedWrites` a `produce` or `countQueued` step must read, where it is
  /// known: on a container that only this root writes (and no `deinit` of a closure of the
  /// other container may write), outside any call on it the count is 0, since every call
  /// before returned, and behind a proxy held here it is what this hold queued so far.
  func annotateBacklog(_ program: inout CheckedProgram) {
    guard case .threadSafe = program.flavor else { return }
    var exact = Set(ContainerName.allCases).subtracting(ProgramModel(program).contended)
    for root in program.roots {
      for step in root.steps {
        Self.visit(step) { inner in
          if case .deinitCallback(let y, let call, let target) = inner, y != target,
            call != .read
          {
            exact.remove(target)
          }
        }
      }
    }
    for index in program.roots.indices {
      program.roots[index].steps = Self.annotate(
        program.roots[index].steps, exact: exact, enclosing: [], held: [:])
    }
  }

  /// `held[x]`: the writes queued so far behind a proxy of x held here, if known.
  static func annotate(
    _ list: [ProgramStep], exact: Set<ContainerName>, enclosing: Set<ContainerName>,
    held: [ContainerName: Int]
  ) -> [ProgramStep] {
    var held = held
    var result: [ProgramStep] = []
    for step in list {
      switch step {
      case .produce(let x, let count, _):
        var expect: Int?
        if exact.contains(x) {
          if let queued = held[x] {
            expect = queued + count
            held[x] = queued + count
          } else if !enclosing.contains(x) {
            expect = 0
          }
        }
        result.append(.produce(x, count: count, expect: expect))
        continue
      case .countQueued(let x, _):
        let expect = exact.contains(x) ? (held[x] ?? (enclosing.contains(x) ? nil : 0)) : nil
        result.append(.countQueued(x, expect: expect))
        continue
      case .writer(let x, let use, let body), .checkout(let x, let use, let body):
        // A proxy taken outside every call on x, on a container only this root writes, has
        // nothing queued behind it yet.
        var inner: [ContainerName: Int] = [:]
        if exact.contains(x) && !enclosing.contains(x) { inner[x] = 0 }
        let annotated = annotate(body, exact: exact, enclosing: enclosing.union([x]), held: inner)
        if case .writer = step {
          result.append(.writer(x, use, annotated))
        } else {
          result.append(.checkout(x, use, annotated))
        }
      default:
        result.append(
          step.replacingBody { x, body in
            annotate(body, exact: exact, enclosing: enclosing.union([x]), held: [:])
          })
      }
      // Whatever else this step did on a held container, its count is no longer known.
      for x in held.keys where touches(step, x) { held[x] = nil }
    }
    return result
  }

  /// Whether `step` calls x anywhere inside it, other than to read it.
  static func touches(_ step: ProgramStep, _ x: ContainerName) -> Bool {
    var found = false
    visit(step) { inner in
      switch inner {
      case .read, .countQueued, .drained, .readClosure, .sleep, .work: break
      case .deinitCallback(let y, _, let target): found = found || y == x || target == x
      case .produce(let y, _, _), .storm(let y, _, _, _), .tryWrite(let y, _),
        .withWriter(let y, _), .awaitWrite(let y, _), .writeUnlessCancelled(let y, _),
        .writeNext(let y, _, _), .writer(let y, _, _), .checkout(let y, _, _),
        .transaction(let y, _):
        found = found || y == x
      }
    }
    return found
  }

  /// Calls `body` on `step` and every step nested in it.
  static func visit(_ step: ProgramStep, _ body: (ProgramStep) -> Void) {
    body(step)
    for inner in step.nested { visit(inner, body) }
  }
}

extension ProgramStep {
  /// The steps nested in this one's closure.
  var nested: [ProgramStep] {
    switch self {
    case .readClosure(_, let body), .tryWrite(_, let body), .withWriter(_, let body),
      .awaitWrite(_, let body), .writeUnlessCancelled(_, let body), .writeNext(_, _, let body),
      .writer(_, _, let body), .checkout(_, _, let body):
      return body
    default: return []
    }
  }

  /// This step with its nested steps replaced by `transform(container, nested)`.
  func replacingBody(
    _ transform: (ContainerName, [ProgramStep]) -> [ProgramStep]
  ) -> ProgramStep {
    switch self {
    case .readClosure(let x, let body): return .readClosure(x, transform(x, body))
    case .tryWrite(let x, let body): return .tryWrite(x, transform(x, body))
    case .withWriter(let x, let body): return .withWriter(x, transform(x, body))
    case .awaitWrite(let x, let body): return .awaitWrite(x, transform(x, body))
    case .writeUnlessCancelled(let x, let body):
      return .writeUnlessCancelled(x, transform(x, body))
    case .writeNext(let x, let use, let body): return .writeNext(x, use, transform(x, body))
    case .writer(let x, let use, let body): return .writer(x, use, transform(x, body))
    case .checkout(let x, let use, let body): return .checkout(x, use, transform(x, body))
    default: return self
    }
  }
}
