/// One public call of a generated program, with the steps nested in its closure.
indirect enum ProgramStep: Sendable, Hashable {
  /// `_ = x.read`
  case read(ContainerName)
  /// `x.read { _ in <nested> }`
  case readClosure(ContainerName, [ProgramStep])
  /// `x.tryWrite { $0.a += 1; <nested>; $0.b += 1 }`
  case tryWrite(ContainerName, [ProgramStep])
  /// `x.withWriter { $0.a += 1; <nested>; $0.b += 1 }`
  case withWriter(ContainerName, [ProgramStep])
  /// `x.writeNext { p in ... }`, using the proxy as `ProxyUse` says.
  case writeNext(ContainerName, ProxyUse, [ProgramStep])
  /// `if let p = x.writer { ... }`
  case writer(ContainerName, ProxyUse, [ProgramStep])
  /// `let p = try await x.checkout(); ...` (tasks only)
  case checkout(ContainerName, ProxyUse, [ProgramStep])
  /// `await x.write { $0.a += 1; <nested>; $0.b += 1 }` (tasks only)
  case awaitWrite(ContainerName, [ProgramStep])
  /// `try await x.writeUnlessCancelled { ... }` (tasks only)
  case writeUnlessCancelled(ContainerName, [ProgramStep])
  /// `x.writeNext { [probe] p in <a, b> }`, where `probe`'s deinit calls `call` on `target`.
  case deinitCallback(ContainerName, DeinitCall, target: ContainerName)
  /// `usleep`, or `Task.sleep` in a task's own steps.
  case sleep(Int)
  /// Busy-waits this many microseconds (a body that takes a while).
  case work(Int)
  /// Two threads queue `writeNext`s on x for the given milliseconds, each body spinning a
  /// little and queueing up to `followUps` levels of nested `writeNext`s; returns at once.
  /// `load`: 0 light, 1 faster than one thread can serve, 2 few long bodies (see
  /// `ProgramInterpreter.storm`). Then each thread
  /// keeps queueing a write every half millisecond until a `tryWrite` finds the queue
  /// drained, so that serving can always be handed on.
  case storm(ContainerName, milliseconds: Int, followUps: Int, load: Int)
  /// `for i in 1...count { x.writeNext { p in p.write.a += 1; p.write.tags[me] = i; p.write.b
  /// += 1 } }`, each body checking that this producer's writes before it ran, in order;
  /// then `x.queuedWrites == expect`, when the generator knows it exactly (see
  /// `ProgramGenerator.annotateBacklog`).
  case produce(ContainerName, count: Int, expect: Int?)
  /// `await x.drained()` (tasks only), then every write this task's `produce` steps queued
  /// on x before it must be in `x.read`.
  case drained(ContainerName)
  /// `x.queuedWrites`: never negative, and `expect` when the generator knows it exactly.
  case countQueued(ContainerName, expect: Int?)
  /// `x.transaction { d in ... }` or `try await x.transaction { d in ... }`, as the form
  /// says: its draft holds a marker no commit publishes (see `TransactionForm`).
  case transaction(ContainerName, TransactionForm)

  /// The call, for failure messages.
  var label: String {
    var lines: [String] = []
    render("", into: &lines)
    return lines.first ?? ""
  }

  /// Readable pseudo-code, indented.
  func render(_ indent: String, into lines: inout [String]) {
    func nested(_ steps: [ProgramStep]) {
      for step in steps { step.render(indent + "  ", into: &lines) }
    }
    func block(_ head: String, _ steps: [ProgramStep], _ tail: String = "}") {
      if steps.isEmpty {
        lines.append(indent + head + " " + tail)
      } else {
        lines.append(indent + head)
        nested(steps)
        lines.append(indent + tail)
      }
    }
    switch self {
    case .read(let x): lines.append(indent + "_ = \(x).read")
    case .readClosure(let x, let body): block("\(x).read { _ in", body)
    case .tryWrite(let x, let body):
      block("\(x).tryWrite { $0.a += 1;", body, "$0.b += 1 }")
    case .withWriter(let x, let body):
      block("\(x).withWriter { $0.a += 1;", body, "$0.b += 1 }")
    case .writeNext(let x, let use, let body):
      block(
        "\(x).writeNext [\(use.label)] { p in p.write.a += 1;\(use.opening)", body,
        "\(use.closing)p.write.b += 1 }")
    case .writer(let x, let use, let body):
      block(
        "if let p = \(x).writer [\(use.label)] { p.write.a += 1;\(use.opening)", body,
        "\(use.closing)p.write.b += 1 }")
    case .checkout(let x, let use, let body):
      block(
        "let p = try await \(x).checkout() [\(use.label)]; p.write.a += 1;\(use.opening)",
        body, "\(use.closing)p.write.b += 1; release p")
    case .awaitWrite(let x, let body):
      block("await \(x).write { $0.a += 1;", body, "$0.b += 1 }")
    case .writeUnlessCancelled(let x, let body):
      block("try await \(x).writeUnlessCancelled { $0.a += 1;", body, "$0.b += 1 }")
    case .deinitCallback(let x, let call, let target):
      lines.append(
        indent + "\(x).writeNext { [probe] p in a, b }  // probe.deinit: \(target).\(call)")
    case .sleep(let ms): lines.append(indent + "sleep(\(ms) ms)")
    case .work(let us): lines.append(indent + "busy-wait \(us) µs")
    case .storm(let x, let ms, let followUps, let load):
      lines.append(
        indent
          + "storm: 2 threads queue \(x).writeNext for \(ms) ms, load \(load), "
          + "bodies queue \(followUps) levels of follow-ups, then until drained")
    case .produce(let x, let count, let expect):
      lines.append(
        indent + "\(count) × \(x).writeNext { p in a, tags[me] = i, b }"
          + (expect.map { "; check \(x).queuedWrites == \($0)" } ?? ""))
    case .drained(let x):
      lines.append(indent + "await \(x).drained(); check this task's produced writes are in it")
    case .countQueued(let x, let expect):
      lines.append(indent + "check \(x).queuedWrites " + (expect.map { "== \($0)" } ?? ">= 0"))
    case .transaction(let x, let form): lines.append(indent + form.render(x))
    }
  }
}
