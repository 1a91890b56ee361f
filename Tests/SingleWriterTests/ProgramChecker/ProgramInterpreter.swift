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
    run.enter()
    defer { StepMarker.current = saved }
    let box = run.box
    switch step {
    case .read(let x): _ = box(x).read
    case .readClosure(let x, let body): box(x).read { _ in runSync(body, origin: origin) }
    case .tryWrite(let x, let body):
      let done: Void? = box(x).tryWrite { value in closureBody(&value, body, origin) }
      if done != nil { run.count(x) }
    case .withWriter(let x, let body):
      run.count(x)
      box(x).withWriter { value in closureBody(&value, body, origin) }
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
        run.bodyBegan(origin: origin)
        proxy.write.a += 1
        proxy.write.b += 1
      }
    case .sleep(let milliseconds): usleep(UInt32(milliseconds * 1_000))
    case .storm(let x, let milliseconds, let followUps):
      storm(x, milliseconds: milliseconds, followUps: followUps)
    case .checkout, .awaitWrite, .writeUnlessCancelled:
      preconditionFailure("an async step in synchronous code: \(step)")
    }
  }

  func closureBody(_ value: inout CheckedPair, _ body: [ProgramStep], _ origin: UInt) {
    run.bodyBegan(origin: origin)
    value.a += 1
    runSync(body, origin: origin)
    value.b += 1
  }

  func writeNext(_ x: ContainerName, _ use: ProxyUse, _ body: [ProgramStep], origin: UInt) {
    let run = run
    guard use == .keepHere else {
      run.box(x).writeNext { proxy in
        run.bodyBegan(origin: origin)
        useProxy(proxy, use, body, origin: origin)
      }
      return
    }
    let kept = KeptProxy()
    run.box(x).writeNext { proxy in
      run.bodyBegan(origin: origin)
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
  /// follow-ups, which keep the origin of the write that queued them.
  func storm(_ x: ContainerName, milliseconds: Int, followUps: Int) {
    let run = run
    for _ in 0..<2 {
      run.group.enter()
      Thread.detachNewThread {
        let origin = StepMarker.thread
        let end = StepMarker.now + UInt64(milliseconds) * 1_000_000
        // About 6,000 writes a second from the two threads, each with its follow-ups at
        // most 4 bodies of 20 µs: under half a core of work, so the queue keeps draining
        // and no backlog is left for whoever serves last.
        var n = 0
        while StepMarker.now < end {
          run.enter()
          run.count(x)
          queueStormWrite(x, origin: origin, levels: followUps)
          n += 1
          usleep(UInt32(n % 4 == 0 ? 700 : 200))
        }
        run.group.leave()
      }
    }
  }

  func queueStormWrite(_ x: ContainerName, origin: UInt, levels: Int) {
    let run = run
    let interpreter = self
    run.box(x).writeNext { proxy in
      run.bodyBegan(origin: origin)
      let end = StepMarker.now + 20_000
      while StepMarker.now < end {}
      proxy.write.a += 1
      if levels > 0 {
        run.count(x)
        interpreter.queueStormWrite(x, origin: origin, levels: levels - 1)
      }
      proxy.write.b += 1
    }
  }

  // MARK: Asynchronous steps

  func runAsync(_ steps: [ProgramStep], isolation: isolated (any Actor)? = #isolation) async {
    for step in steps { await runAsync(step) }
  }

  func runAsync(_ step: ProgramStep, isolation: isolated (any Actor)? = #isolation) async {
    let run = run
    let interpreter = self
    let origin = StepMarker.thread
    switch step {
    case .awaitWrite(let x, let body):
      let mark = run.enter(awaitWrite: true)
      run.count(x)
      await run.box(x).write { value in
        run.bodyBegan(origin: origin, own: mark)
        mark.begun = true
        interpreter.closureBody(&value, body, origin)
      }
      run.enter()
    case .writeUnlessCancelled(let x, let body):
      let mark = run.enter(awaitWrite: true)
      do {
        try await run.box(x).writeUnlessCancelled { value in
          run.bodyBegan(origin: origin, own: mark)
          mark.begun = true
          interpreter.closureBody(&value, body, origin)
        }
        run.count(x)
      } catch {}
      run.enter()
    case .checkout(let x, let use, let body):
      run.enter()
      guard let proxy = try? await run.box(x).checkout() else { return }
      run.enter()
      run.count(x)
      await useProxy(proxy, use, body)
    case .writer(let x, let use, let body):
      run.enter()
      guard let proxy = run.box(x).writer else { return }
      run.count(x)
      await useProxy(proxy, use, body)
    case .sleep(let milliseconds):
      run.enter()
      try? await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
      run.enter()
    default:
      run.enter()
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
