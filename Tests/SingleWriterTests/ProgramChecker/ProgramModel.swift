/// The model: which ways a generated program may end, by the documented promises.
///
/// Each step is judged in the context of its thread or task (inside which reads, closure
/// writes, accesses and proxies of each container). A queued body runs on whichever
/// thread ends the checkout ahead of it, so it is judged in every context where a
/// checkout of its container may end in this program, found by evaluating the program
/// until those contexts stop growing.
final class ProgramModel {
  let program: CheckedProgram
  /// Containers whose writer another root, a helper or a storm may hold at any moment, so
  /// that a write there may find it busy (queue, or get `nil`).
  private(set) var contended: Set<ContainerName> = []
  private var releaseContexts: [ContainerName: Set<ModelContext>] = [:]
  private var collecting: [ContainerName: Set<ModelContext>] = [:]
  private var background: [ModelOutcomes] = []
  private var rootCancellable = false
  /// Bounded containers where a write that may pass the bound can queue: from the
  /// checkout's holder or inside a read, a task that holds the writer across a suspension,
  /// an `await write`, `checkout()` or `withWriter` that may queue. Everywhere else, only
  /// ordinary producers queue, and `queuedWrites` never passes the bound.
  private var boundBroken: Set<ContainerName> = []
  /// How many bodies that may not run at all (a `tryWrite` or `writer` that may find the
  /// writer busy, a `checkout()` that may be cancelled) enclose the step judged now: a
  /// write they queue is not certain to run.
  private var mayNotRun = 0

  init(_ program: CheckedProgram) {
    self.program = program
    var writers: [ContainerName: Int] = [:]
    for root in program.roots {
      var written: Set<ContainerName> = []
      for step in root.steps { collectWrites(step, into: &written) }
      for x in written { writers[x, default: 0] += 1 }
    }
    contended = Set(writers.filter { $0.value >= 2 }.map(\.key))
    for root in program.roots { for step in root.steps { collectHeld(step) } }
    for root in program.roots {
      for step in root.steps { collectBoundBreakers(step, async: root.kind.isTask) }
    }
  }

  /// The bounded containers whose `queuedWrites` must never pass the bound.
  var boundHolds: Set<ContainerName> {
    _ = outcomes
    return Set(program.bounds.keys).subtracting(boundBroken)
  }

  /// What the program may do.
  lazy var outcomes: ModelOutcomes = evaluate()

  private func evaluate() -> ModelOutcomes {
    guard case .threadSafe = program.flavor else { return .complete }
    var result: ModelOutcomes = []
    for _ in 0..<4 {
      collecting = releaseContexts
      background = []
      var parts: [ModelOutcomes] = []
      for root in program.roots {
        rootCancellable = root.cancelAfter != nil
        parts.append(steps(root.steps, ModelContext(inTask: root.kind.isTask)))
      }
      result = .concurrent(parts + background)
      if collecting == releaseContexts { break }
      releaseContexts = collecting
    }
    return result
  }

  private func collectWrites(_ step: ProgramStep, into written: inout Set<ContainerName>) {
    switch step {
    case .read, .sleep, .work, .drained, .countQueued: break
    case .produce(let x, _, _), .transaction(let x, _): written.insert(x)
    case .readClosure(_, let body):
      for inner in body { collectWrites(inner, into: &written) }
    case .tryWrite(let x, let body), .withWriter(let x, let body), .awaitWrite(let x, let body),
      .writeUnlessCancelled(let x, let body), .writeNext(let x, _, let body),
      .writer(let x, _, let body), .checkout(let x, _, let body):
      written.insert(x)
      for inner in body { collectWrites(inner, into: &written) }
    case .deinitCallback(let x, let call, let target):
      written.insert(x)
      if call != .read { written.insert(target) }
    case .storm(let x, _, _, _):
      written.insert(x)
      contended.insert(x)
    }
  }

  /// What lets writes queue past a bound, whatever the context: see `boundBroken`. The
  /// writes from the checkout's holder are found as the model evaluates the program.
  private func collectBoundBreakers(_ step: ProgramStep, async: Bool) {
    switch step {
    case .awaitWrite(let x, let body), .writeUnlessCancelled(let x, let body):
      boundBroken.insert(x)
      for inner in body { collectBoundBreakers(inner, async: false) }
    case .withWriter(let x, let body):
      // Waits, and queues after about a millisecond, only if x may be busy.
      if contended.contains(x) { boundBroken.insert(x) }
      for inner in body { collectBoundBreakers(inner, async: false) }
    case .writer(let x, let use, let body), .checkout(let x, let use, let body),
      .writeNext(let x, let use, let body):
      if case .checkout = step { boundBroken.insert(x) }
      // A helper's proxy still names the thread or task that took it, whose writes then
      // count as the holder's; a task's proxy held across a suspension names the thread
      // it was taken on, where other tasks run meanwhile.
      if use == .handToThread || use == .handToTask { boundBroken.insert(x) }
      let asyncBody = async && use != .insideAccess && !Self.isWriteNext(step)
      if asyncBody && !body.isEmpty { boundBroken.insert(x) }
      for inner in body { collectBoundBreakers(inner, async: asyncBody) }
    case .readClosure(_, let body), .tryWrite(_, let body):
      for inner in body { collectBoundBreakers(inner, async: false) }
    case .deinitCallback(_, let call, let target):
      // The `deinit` runs wherever the closure is released, perhaps while still marked
      // as the checkout's holder.
      if call != .read { boundBroken.insert(target) }
    case .storm(let x, _, let followUps, _):
      if followUps > 0 { boundBroken.insert(x) }
    case .transaction(let x, _):
      // Waits its turn as `withWriter` or `checkout()` does, perhaps in the queue.
      boundBroken.insert(x)
    case .read, .sleep, .work, .produce, .drained, .countQueued: break
    }
  }

  private static func isWriteNext(_ step: ProgramStep) -> Bool {
    if case .writeNext = step { return true }
    return false
  }

  /// Whether `step`, run where a proxy of x is held, queues a write on x behind it:
  /// `surely` at its top, or anywhere inside it.
  static func queues(_ step: ProgramStep, on x: ContainerName, surely: Bool) -> Bool {
    switch step {
    case .writeNext(let y, _, let body):
      return y == x || (!surely && body.contains { queues($0, on: x, surely: false) })
    case .produce(let y, let count, _): return y == x && count > 0
    case .deinitCallback(let y, let call, let target):
      return y == x || (!surely && call == .writeNext && target == x)
    case .storm(let y, _, _, _): return !surely && y == x
    case .readClosure(_, let body), .tryWrite(_, let body), .withWriter(_, let body),
      .awaitWrite(_, let body), .writeUnlessCancelled(_, let body), .writer(_, _, let body),
      .checkout(_, _, let body):
      return !surely && body.contains { queues($0, on: x, surely: false) }
    case .read, .sleep, .work, .drained, .countQueued, .transaction: return false
    }
  }

  /// Whether `step` hands a proxy of x to a helper, anywhere inside it.
  static func handsAway(_ step: ProgramStep, _ x: ContainerName) -> Bool {
    switch step {
    case .writer(let y, let use, let body), .checkout(let y, let use, let body),
      .writeNext(let y, let use, let body):
      if y == x && (use == .handToThread || use == .handToTask) { return true }
      return body.contains { handsAway($0, x) }
    case .readClosure(_, let body), .tryWrite(_, let body), .withWriter(_, let body),
      .awaitWrite(_, let body), .writeUnlessCancelled(_, let body):
      return body.contains { handsAway($0, x) }
    default: return false
    }
  }

  /// Proxies handed to helpers hold the writer after the step returned.
  private func collectHeld(_ step: ProgramStep) {
    switch step {
    case .writeNext(let x, let use, let body), .writer(let x, let use, let body),
      .checkout(let x, let use, let body):
      if use == .handToThread || use == .handToTask { contended.insert(x) }
      body.forEach(collectHeld)
    case .readClosure(_, let body), .tryWrite(_, let body), .withWriter(_, let body),
      .awaitWrite(_, let body), .writeUnlessCancelled(_, let body):
      body.forEach(collectHeld)
    default: break
    }
  }

  private func steps(_ list: [ProgramStep], _ context: ModelContext) -> ModelOutcomes {
    var result: ModelOutcomes = .complete
    var context = context
    for step in list {
      result = result.then(evaluate(step, context))
      if !result.contains(.complete) { break }
      // What the next steps' `drained()` finds: writes queued behind a proxy held here,
      // and proxies this task handed away.
      for x in ContainerName.allCases {
        if context.holding.contains(x) {
          if Self.queues(step, on: x, surely: true) {
            context.queuedBehind.insert(x)
          } else if Self.queues(step, on: x, surely: false) {
            context.mayHaveQueuedBehind.insert(x)
          }
        }
        if context.inTask && Self.handsAway(step, x) { context.handedAway.insert(x) }
      }
    }
    return result
  }

  private func released(_ x: ContainerName, _ context: ModelContext) {
    collecting[x, default: []].insert(context.serving)
  }

  /// A body queued on x, judged wherever x's queue may be served. Unless `certain`, the
  /// write may also have run in place instead, so the queued run is only one possibility.
  private func queued(
    _ x: ContainerName, certain: Bool, _ body: (ModelContext) -> ModelOutcomes
  ) {
    var contexts = releaseContexts[x] ?? []
    contexts.insert(ModelContext())
    var result: ModelOutcomes = certain && mayNotRun == 0 ? [] : .complete
    for context in contexts { result.formUnion(body(context)) }
    background.append(result)
  }

  /// Judges a body that may not run at all (when `condition`): see `mayNotRun`.
  private func perhaps(
    if condition: Bool = true, _ body: () -> ModelOutcomes
  ) -> ModelOutcomes {
    if condition { mayNotRun += 1 }
    defer { if condition { mayNotRun -= 1 } }
    return body()
  }

  private func access(_ x: ContainerName, _ context: ModelContext) -> ModelOutcomes {
    context.reading.contains(x) ? .stop : .complete
  }

  private func closureWrite(
    _ x: ContainerName, _ body: [ProgramStep], _ context: ModelContext
  ) -> ModelOutcomes {
    var inner = context
    inner.closureWriting.insert(x)
    let result = steps(body, inner)
    released(x, context)
    return result
  }

  /// A proxy of x used as `use` says, taken in `context`; `lent` for a `writeNext` body.
  private func proxy(
    _ x: ContainerName, _ use: ProxyUse, _ body: [ProgramStep], _ context: ModelContext,
    lent: Bool
  ) -> ModelOutcomes {
    var inner = context
    if lent { inner.lent.insert(x) } else { inner.holding.insert(x) }
    let first = access(x, inner)
    switch use {
    case .twoAccesses, .keepHere:
      return first.then(steps(body, inner)).then(access(x, inner))
    case .insideAccess:
      var accessing = inner
      accessing.accessing.insert(x)
      return first.then(access(x, inner)).then(steps(body, accessing)).then(access(x, inner))
    case .handToThread, .handToTask:
      released(x, ModelContext(inTask: use == .handToTask))
      return first.then(steps(body, inner))
    }
  }

  private func writeNext(
    _ x: ContainerName, _ use: ProxyUse, _ body: [ProgramStep], _ context: ModelContext,
    deinitCall: ProgramStep?
  ) -> ModelOutcomes {
    // From the checkout's holder, or inside a read, it queues past a bound.
    if context.ownsCheckout(x) || context.reading.contains(x) { boundBroken.insert(x) }
    let inPlace: () -> ModelOutcomes = {
      var result: ModelOutcomes
      if use == .keepHere {
        var lent = context
        lent.lent.insert(x)
        var holding = context
        holding.holding.insert(x)
        result = self.access(x, lent).then(self.steps(body, holding)).then(
          self.access(x, holding))
      } else {
        result = self.proxy(x, use, body, context, lent: true)
      }
      if use != .handToThread && use != .handToTask { self.released(x, context) }
      if let deinitCall { result = result.then(self.evaluate(deinitCall, context)) }
      return result
    }
    let queue: (Bool) -> ModelOutcomes = { certain in
      self.queued(x, certain: certain) { serving in
        var lent = serving
        lent.lent.insert(x)
        var result = self.proxy(
          x, use == .keepHere ? .twoAccesses : use, use == .keepHere ? [] : body, serving,
          lent: true)
        if let deinitCall { result = result.then(self.evaluate(deinitCall, lent)) }
        return result
      }
      // A keep-here body that ran elsewhere kept nothing: the caller goes on as it was.
      return use == .keepHere ? self.steps(body, context) : .complete
    }
    if context.ownsCheckout(x) { return queue(true) }
    if context.reading.contains(x) {
      // Would run in place inside the read: stops. Busy: may queue and complete.
      return contended.contains(x) ? queue(false).union(.stop) : .stop
    }
    return contended.contains(x) ? inPlace().union(queue(false)) : inPlace()
  }

  private func evaluate(_ step: ProgramStep, _ context: ModelContext) -> ModelOutcomes {
    switch step {
    case .read(let x):
      let blocked = context.closureWriting.contains(x) || context.accessing.contains(x)
      return blocked ? .stop : .complete
    case .readClosure(let x, let body):
      if context.closureWriting.contains(x) || context.accessing.contains(x) { return .stop }
      var inner = context
      inner.reading.insert(x)
      return steps(body, inner)
    case .tryWrite(let x, let body):
      if context.reading.contains(x) { return .stop }
      if context.ownsCheckout(x) { return .complete }  // returns nil
      guard contended.contains(x) else { return closureWrite(x, body, context) }
      return perhaps { closureWrite(x, body, context) }.union(.complete)
    case .withWriter(let x, let body):
      if context.reading.contains(x) || context.closureWriting.contains(x)
        || context.lent.contains(x) || context.accessing.contains(x)
      {
        return .stop
      }
      if context.holding.contains(x) { return .warnThread }
      return closureWrite(x, body, context)
    case .writeNext(let x, let use, let body):
      return writeNext(x, use, body, context, deinitCall: nil)
    case .deinitCallback(let x, let call, let target):
      let callStep: ProgramStep
      switch call {
      case .writeNext: callStep = .writeNext(target, .twoAccesses, [])
      case .read: callStep = .read(target)
      case .withWriter: callStep = .withWriter(target, [])
      }
      return writeNext(x, .twoAccesses, [], context, deinitCall: callStep)
    case .writer(let x, let use, let body):
      if context.ownsCheckout(x) { return .complete }  // nil
      let got = perhaps(if: contended.contains(x)) { proxy(x, use, body, context, lent: false) }
      if use == .twoAccesses || use == .insideAccess { released(x, context) }
      return contended.contains(x) ? got.union(.complete) : got
    case .checkout(let x, let use, let body):
      if context.holding.contains(x) { return .warnTask }
      let got = perhaps(if: rootCancellable) { proxy(x, use, body, context, lent: false) }
      if use == .twoAccesses || use == .insideAccess { released(x, context) }
      return rootCancellable ? got.union(.complete) : got
    case .awaitWrite(let x, let body), .writeUnlessCancelled(let x, let body):
      if context.holding.contains(x) { return .warnTask }
      let inPlace = closureWrite(x, body, context)
      guard contended.contains(x) else { return inPlace }
      queued(x, certain: false) { serving in
        var inner = serving
        inner.closureWriting.insert(x)
        return self.steps(body, inner)
      }
      return inPlace.union(.complete)
    case .produce(let x, let count, _):
      guard count > 0 else { return .complete }
      return writeNext(x, .twoAccesses, [], context, deinitCall: nil)
    case .drained(let x):
      // Waits, warned after a second ("same task"), if this task holds a proxy it took,
      // with writes queued behind it; a proxy it handed away is still its own as far as
      // the warning knows, until the helper releases it.
      if context.holding.contains(x) {
        if context.queuedBehind.contains(x) { return .warnTask }
        let may = contended.contains(x) || context.mayHaveQueuedBehind.contains(x)
        return may ? [.warnTask, .complete] : .complete
      }
      return context.handedAway.contains(x) ? [.warnTask, .complete] : .complete
    case .countQueued: return .complete
    case .sleep, .work: return .complete
    case .transaction(let x, let form):
      // Waits and holds the writer as `withWriter` (sync) or `checkout()` (async) does.
      return evaluate(form.isAsync ? .checkout(x, .twoAccesses, []) : .withWriter(x, []), context)
    case .storm(let x, _, _, _):
      released(x, ModelContext())
      queued(x, certain: true) { serving in
        var lent = serving
        lent.lent.insert(x)
        return self.access(x, lent)
      }
      return .complete
    }
  }
}
