import Foundation
import SingleWriter

/// Runs a generated program's steps against the real containers.
struct ProgramInterpreter: Sendable {
  let run: ProgramRun

  // MARK: Synchronous steps

  func runSync(_ steps: [ProgramStep], origin: UInt) {
    for step in steps { runSync(step, origin: origin) }
  }

  func runSync(_ step: ProgramStep, origin: UInt) {
    let saved = StepMarker.current
    run.enter(step.label)
    defer { StepMarker.current = saved }
    let box = run.box
    switch step {
    case .read(let x): run.checkPublished(x, box(x).read, "a read")
    case .readClosure(let x, let body):
      box(x).read { value in
        run.checkPublished(x, value, "a read { }")
        runSync(body, origin: origin)
      }
    case .tryWrite(let x, let body):
      let done: Void? = box(x).tryWrite { value in closureBody(x, &value, body, origin) }
      if done != nil { run.count(x) }
    case .withWriter(let x, let body):
      run.count(x)
      box(x).withWriter { value in closureBody(x, &value, body, origin) }
    case .writeNext(let x, let use, let body):
      run.count(x)
      writeNext(x, use, body, origin: origin)
    case .writer(let x, let use, let body):
      if let proxy = box(x).writer {
        run.count(x)
        useProxy(proxy, use, body, origin: origin)
      }
    case .deinitCallback(let x, let call, let target):
      run.count(x)
      let interpreter = self
      let probe = DeinitProbe {
        switch call {
        case .writeNext: interpreter.runSync(.writeNext(target, .twoAccesses, []), origin: origin)
        case .read: interpreter.runSync(.read(target), origin: origin)
        case .withWriter: interpreter.runSync(.withWriter(target, []), origin: origin)
        }
      }
      box(x).writeNext { [probe, run] proxy in
        probe.touch()
        run.bodyBegan(x, origin: origin)
        proxy.write.a += 1
        proxy.write.b += 1
      }
    case .sleep(let milliseconds): usleep(UInt32(milliseconds * 1_000))
    case .work(let microseconds):
      let end = StepMarker.now + UInt64(microseconds) * 1_000
      while StepMarker.now < end {}
    case .storm(let x, let milliseconds, let followUps, let load):
      storm(x, milliseconds: milliseconds, followUps: followUps, load: load)
    case .produce(let x, let count, let expect):
      produce(x, count, expect: expect, origin: origin)
    case .countQueued(let x, let expect):
      let queued = run.checkQueued(x, "at \(step.label)")
      if let expect, queued != expect {
        run.fail(
          "queuedWrites on \(x) read \(queued) where the model expects \(expect): \(step.label)")
      }
    case .transaction(let x, let form):
      precondition(!form.isAsync, "an async step in synchronous code: \(step)")
      transaction(x, form, origin: origin)
    case .checkout, .awaitWrite, .writeUnlessCancelled, .drained:
      preconditionFailure("an async step in synchronous code: \(step)")
    }
  }

  func closureBody(
    _ x: ContainerName, _ value: inout CheckedPair, _ body: [ProgramStep], _ origin: UInt
  ) {
    run.bodyBegan(x, origin: origin)
    run.checkPublished(x, value, "a write body")
    value.a += 1
    runSync(body, origin: origin)
    value.b += 1
  }

  func writeNext(_ x: ContainerName, _ use: ProxyUse, _ body: [ProgramStep], origin: UInt) {
    let run = run
    guard use == .keepHere else {
      run.box(x).writeNext { proxy in
        run.bodyBegan(x, origin: origin)
        useProxy(proxy, use, body, origin: origin)
      }
      return
    }
    let kept = KeptProxy()
    run.box(x).writeNext { proxy in
      run.bodyBegan(x, origin: origin)
      proxy.write.a += 1
      if !kept.keep(proxy) { proxy.write.b += 1 }
    }
    if let proxy = kept.take() {
      runSync(body, origin: origin)
      proxy.write.b += 1
    } else {
      runSync(body, origin: origin)
    }
  }

  /// `count` writes of one producer, queued (or run) in order: each body checks that the
  /// producer's writes before it ran, once each, in order. Then `queuedWrites`, exactly
  /// when the generator knows it; a task logs the writes for its `drained()` steps.
  func produce(_ x: ContainerName, _ count: Int, expect: Int?, origin: UInt) {
    let run = run
    let producer = run.newProducer()
    for sequence in 1...count {
      // A step of its own for each call: a call chosen to serve is bounded on its own.
      run.enter("produce \(x) #\(producer) write \(sequence) of \(count)")
      run.count(x)
      let write = { @Sendable in
        run.box(x).writeNext { proxy in
          run.bodyBegan(x, origin: origin)
          proxy.write.a += 1
          let before = proxy.write.tag(producer, sequence)
          if before != sequence - 1 {
            run.fail(
              "writes out of order, lost or doubled: write \(sequence) of producer "
                + "#\(producer) on \(x) ran after its write \(before)")
          }
          proxy.write.b += 1
        }
      }
      if run.program.inlineProducers,
        #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *)
      {
        // Runs inline: `writeNext` has returned when `Task.immediate` does.
        Task.immediate { write() }
      } else {
        write()
      }
      run.checkQueued(x, "right after write \(sequence) of producer #\(producer) returned")
    }
    if let expect {
      let queued = run.box(x).queuedWrites
      if queued != expect {
        run.fail(
          "queuedWrites on \(x) read \(queued) right after producer #\(producer) queued "
            + "\(count) writes, where the model expects exactly \(expect)")
      }
    }
    ProducedLog.current?.add(x, producer: producer, count: count)
  }

  /// `a += 1`, the nested steps, `b += 1`, as `use` says; the release is the caller's, or
  /// a helper's.
  func useProxy(
    _ proxy: ThreadSafeWriterProxy<CheckedPair>, _ use: ProxyUse, _ body: [ProgramStep],
    origin: UInt
  ) {
    proxy.write.a += 1
    switch use {
    case .twoAccesses, .keepHere:
      runSync(body, origin: origin)
      proxy.write.b += 1
    case .insideAccess:
      proxy.write.visit { runSync(body, origin: origin) }
      proxy.write.b += 1
    case .handToThread, .handToTask:
      runSync(body, origin: origin)
      handOff(proxy, toTask: use == .handToTask)
    }
  }

  /// A helper thread or task that finishes the write 2 ms later and releases the proxy.
  func handOff(_ proxy: ThreadSafeWriterProxy<CheckedPair>, toTask: Bool) {
    let holder = KeptProxy(proxy)
    let run = run
    run.group.enter()
    if toTask {
      Task.detached {
        run.enter()
        try? await Task.sleep(nanoseconds: 2_000_000)
        run.enter()
        if let proxy = holder.take() { proxy.write.b += 1 }
        run.group.leave()
      }
    } else {
      Thread.detachNewThread {
        run.enter()
        usleep(2_000)
        if let proxy = holder.take() { proxy.write.b += 1 }
        run.group.leave()
      }
    }
  }

  /// Two threads queue writes for a while; each body spins a little and may queue nested
  /// follow-ups, which keep the origin of the write that queued them. A light storm is
  /// about 6,000 writes a second (under half a core of work); a heavy one (load 1), about
  /// 25,000, more than one thread can serve; load 2, about 8,000 writes of 80 µs each, which keep
  /// a server busy past its millisecond while others (tasks) queue. Then each thread queues a write every half
  /// millisecond until a `tryWrite` finds the writer free: whoever serves the backlog can
  /// always hand it on to a thread that is still calling.
  func storm(_ x: ContainerName, milliseconds: Int, followUps: Int, load: Int) {
    let run = run
    for _ in 0..<2 {
      run.group.enter()
      Thread.detachNewThread {
        let origin = StepMarker.thread
        let end = StepMarker.now + UInt64(milliseconds) * 1_000_000
        var n = 0
        while StepMarker.now < end {
          run.enter("storm writeNext")
          run.count(x)
          queueStormWrite(
            x, origin: origin, levels: followUps, spin: load == 2 ? 80_000 : 20_000)
          n += 1
          if load == 2 {
            usleep(200)
          } else if load == 1 {
            usleep(n % 8 == 0 ? 200 : 20)
          } else {
            usleep(UInt32(n % 4 == 0 ? 700 : 200))
          }
        }
        let drainEnd = StepMarker.now + 4_000_000_000
        while StepMarker.now < drainEnd {
          run.enter("storm drain")
          let done: Void? = run.box(x).tryWrite { value in
            value.a += 1
            value.b += 1
          }
          if done != nil {
            run.count(x)
            break
          }
          run.count(x)
          queueStormWrite(x, origin: origin, levels: 0, spin: 20_000)
          usleep(500)
        }
        run.group.leave()
      }
    }
  }

  func queueStormWrite(_ x: ContainerName, origin: UInt, levels: Int, spin: UInt64) {
    let run = run
    let interpreter = self
    run.box(x).writeNext { proxy in
      run.bodyBegan(x, origin: origin)
      let end = StepMarker.now + spin
      while StepMarker.now < end {}
      proxy.write.a += 1
      if levels > 0 {
        run.count(x)
        interpreter.queueStormWrite(x, origin: origin, levels: levels - 1, spin: spin)
      }
      proxy.write.b += 1
    }
  }

  // MARK: Asynchronous steps

  /// A task root's steps, with a log of what its `produce` steps queued.
  func runRoot(_ steps: [ProgramStep], isolation: isolated (any Actor)? = #isolation) async {
    await ProducedLog.$current.withValue(ProducedLog()) {
      await runAsync(steps, isolation: isolation)
    }
  }

  func runAsync(_ steps: [ProgramStep], isolation: isolated (any Actor)? = #isolation) async {
    for step in steps { await runAsync(step) }
  }

  func runAsync(_ step: ProgramStep, isolation: isolated (any Actor)? = #isolation) async {
    let run = run
    let interpreter = self
    let origin = StepMarker.thread
    switch step {
    case .awaitWrite(let x, let body):
      let mark = run.enter(step.label, awaitWrite: true)
      run.count(x)
      await run.box(x).write { value in
        run.bodyBegan(x, origin: origin, own: mark)
        mark.begun = true
        interpreter.closureBody(x, &value, body, origin)
      }
      run.enter()
    case .writeUnlessCancelled(let x, let body):
      let mark = run.enter(step.label, awaitWrite: true)
      do {
        try await run.box(x).writeUnlessCancelled { value in
          run.bodyBegan(x, origin: origin, own: mark)
          mark.begun = true
          interpreter.closureBody(x, &value, body, origin)
        }
        run.count(x)
      } catch {}
      run.enter()
    case .checkout(let x, let use, let body):
      run.enter(step.label)
      guard let proxy = try? await run.box(x).checkout() else { return }
      run.enter()
      run.count(x)
      await useProxy(proxy, use, body)
    case .writer(let x, let use, let body):
      run.enter(step.label)
      guard let proxy = run.box(x).writer else { return }
      run.count(x)
      await useProxy(proxy, use, body)
    case .drained(let x):
      run.enter(step.label)
      let owed = ProducedLog.current?.owed(on: x) ?? []
      await run.box(x).drained()
      run.enter()
      let value = run.box(x).read
      for (producer, count) in owed where value.tags[producer] != count {
        run.fail(
          "drained() on \(x) returned before every write queued before it had run: "
            + "producer #\(producer) of this task queued \(count), the value shows "
            + "\(value.tags[producer] ?? 0)")
      }
    case .transaction(let x, let form) where form.isAsync:
      run.enter(step.label)
      await transaction(x, form)
      run.enter()
    case .sleep(let milliseconds):
      run.enter()
      try? await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
      run.enter()
    default:
      run.enter("harness")
      runSync(step, origin: origin)
    }
  }

  func useProxy(
    _ proxy: ThreadSafeWriterProxy<CheckedPair>, _ use: ProxyUse, _ body: [ProgramStep],
    isolation: isolated (any Actor)? = #isolation
  ) async {
    switch use {
    case .twoAccesses, .keepHere:
      proxy.write.a += 1
      await runAsync(body)
      run.enter()
      proxy.write.b += 1
    case .insideAccess:
      useProxy(proxy, use, body, origin: StepMarker.thread)
    case .handToThread, .handToTask:
      proxy.write.a += 1
      await runAsync(body)
      run.enter()
      handOff(proxy, toTask: use == .handToTask)
    }
  }
}
