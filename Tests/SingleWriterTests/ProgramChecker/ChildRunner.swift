import Foundation
import SingleWriter

/// The child process's side: runs a batch of programs, one after another, printing a
/// marker before and after each, and exits with a nonzero code so that the parent's exit
/// test accepts every ending: 10 when the batch is done, 4 when a check failed, 3 from the
/// watchdog; a stop ends it with its own message and signal.
enum ChildRunner {
  static let races = Locked([String]())
  /// Lock-order inversions reported since the program began (debug builds).
  static let inversions = Counter()

  static func emit(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
  }

  static var chaos: Bool { ProcessInfo.processInfo.environment["SINGLEWRITER_CHAOS_SEED"] != nil }

  static func run(_ seeds: [UInt64]) async {
    let watchdog = ChildWatchdog()
    #if DEBUG
      RaceDetector.onRace = { report in
        if report.kind == .lockOrderInversion { inversions.add(1) }
        races.withLock { $0.append("\(report)") }
      }
    #endif
    for seed in seeds {
      let program = ProgramGenerator.program(seed: seed)
      let outcomes = ProgramModel(program).outcomes
      // A program that can only warn ends by the watchdog: a shorter one does.
      let warnsOnly = !outcomes.contains(.complete) && !outcomes.intersection(.warn).isEmpty
      watchdog.arm(seed, seconds: (warnsOnly ? 3.5 : 6) * (chaos ? 3 : 1))
      emit("CHK-BEGIN \(seed)\n")
      let failures = await run(program)
      guard failures.isEmpty else {
        emit("CHK-FAIL \(seed) \(failures.joined(separator: " | "))\n")
        _exit(4)
      }
      emit("CHK-END \(seed)\n")
    }
    emit("CHK-BATCH-DONE\n")
    _exit(10)
  }

  static func run(_ program: CheckedProgram) async -> [String] {
    if case .plain(let onMain, let tasks) = program.flavor {
      return await runPlain(onMain: onMain, tasks)
    }
    let run = ProgramRun(program, chaos: chaos, boundChecked: ProgramModel(program).boundHolds)
    let interpreter = ProgramInterpreter(run: run)
    var consumers: [Task<Void, Never>] = []
    for x in program.consumers {
      let box = run.box(x)
      consumers.append(
        Task.detached {
          for await value in box.changes() {
            run.enter()
            run.checkPublished(x, value, "a changes() consumer")
            if value.a != value.b {
              run.fail(
                "a changes() consumer of \(x) saw a half-done value: a = \(value.a), "
                  + "b = \(value.b)")
            }
          }
        })
    }
    let host = ProgramActor()
    let reportsBefore = inversions.load()
    for root in program.roots {
      // In a sequential program, a root that waits first starts once both containers
      // are free: a proxy handed on by the root before it has been let go.
      if program.sequential, root.startDelay > 0 {
        while run.box(.a).tryWrite({ _ in }) == nil || run.box(.b).tryWrite({ _ in }) == nil {
          usleep(100)
        }
      }
      let ended = program.sequential ? DispatchSemaphore(value: 0) : nil
      run.group.enter()
      let delay = UInt64(root.startDelay) * 1_000_000
      let task: Task<Void, Never>
      switch root.kind {
      case .thread:
        let thread = Thread {
          usleep(UInt32(delay / 1_000))
          run.enter()
          interpreter.runSync(root.steps, origin: StepMarker.thread)
          run.group.leave()
          ended?.signal()
        }
        thread.stackSize = 8 << 20
        thread.start()
        if let ended { await waitFor(ended) }
        continue
      case .pool:
        task = Task.detached {
          try? await Task.sleep(nanoseconds: delay)
          run.enter()
          await interpreter.runRoot(root.steps)
          run.group.leave()
          ended?.signal()
        }
      case .mainActor:
        task = Task { @MainActor in
          try? await Task.sleep(nanoseconds: delay)
          run.enter()
          await interpreter.runRoot(root.steps)
          run.group.leave()
          ended?.signal()
        }
      case .actor:
        task = Task.detached {
          try? await Task.sleep(nanoseconds: delay)
          run.enter()
          await host.run(interpreter, root.steps)
          run.group.leave()
          ended?.signal()
        }
      }
      if let cancel = root.cancelAfter {
        Task.detached {
          try? await Task.sleep(nanoseconds: delay + UInt64(cancel) * 1_000_000)
          task.cancel()
        }
      }
      if let ended { await waitFor(ended) }
    }
    // Meanwhile a thread reads the backlog of each bounded container whose bound holds.
    let sampling = SharedFlag()
    let sampled = DispatchGroup()
    if !run.boundChecked.isEmpty {
      sampled.enter()
      Thread.detachNewThread {
        var samples = 0
        while !sampling.isSet {
          for x in run.boundChecked { run.checkQueued(x, "sampled while the program ran") }
          samples += 1
          usleep(samples % 16 == 0 ? 500 : 50)
        }
        sampled.leave()
      }
    }
    await withCheckedContinuation { continuation in
      run.group.notify(queue: .global()) { continuation.resume() }
    }
    sampling.set()
    await withCheckedContinuation { continuation in
      sampled.notify(queue: .global()) { continuation.resume() }
    }
    for consumer in consumers {
      consumer.cancel()
      await consumer.value
    }
    var failures = run.finalFailures()
    #if DEBUG
      if program.theme == "lock-order" {
        let reports = inversions.load() - reportsBefore
        let expected = ProgramGenerator.expectedLockReports(program)
        if reports != expected {
          failures.append(
            "\(reports) lock-order reports where the model expects \(expected): "
              + races.withLock { $0.last.map { String($0.prefix(600)) } ?? "" })
        }
      }
    #endif
    return failures
  }

  /// Waits, off the cooperative pool, for `semaphore`.
  static func waitFor(_ semaphore: DispatchSemaphore) async {
    await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        semaphore.wait()
        continuation.resume()
      }
    }
  }

  static func runPlain(onMain: Bool, _ tasks: [[PlainStep]]) async -> [String] {
    races.withLock { $0 = [] }
    let value: CheckedPair
    let issued: Int
    let queuedFailures: [String]
    if onMain {
      let owner = await MainPlainOwner()
      await withTaskGroup(of: Void.self) { group in
        for steps in tasks { group.addTask { await owner.run(steps) } }
      }
      (value, issued, queuedFailures) = await owner.result()
    } else {
      let owner = PlainOwner()
      await withTaskGroup(of: Void.self) { group in
        for steps in tasks { group.addTask { await owner.run(steps) } }
      }
      (value, issued, queuedFailures) = await owner.result()
    }
    var failures = races.withLock { $0 }.map {
      "the race detector reported a race on a plain SingleWriter owned by "
        + (onMain ? "the main actor" : "an actor") + ": \($0.prefix(600))"
    }
    failures += queuedFailures
    if value.a != issued || value.b != issued {
      failures.append(
        "lost or doubled writes on the plain SingleWriter: \(issued) issued, a = \(value.a), "
          + "b = \(value.b)")
    }
    return failures
  }
}
