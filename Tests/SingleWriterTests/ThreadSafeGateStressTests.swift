import Dispatch
import Foundation
import Testing

@testable import SingleWriter

extension ThreadSafeSingleWriterGateTests {
  // MARK: The gate, No loss, An await never blocks (Promises.md): under load

  /// Queued bodies keep their proxy and hand it to another thread that drops it at once
  /// (racing the server's `proxyKept`), or to an object whose deinit drops it; withWriter
  /// threads sleep on the gate meanwhile; the gate is re-armed all along.
  @Test func keptProxiesDroppedOnOtherThreadsWhileGatedServersRun() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(40, "kept proxies under the gate")
      let box = ThreadSafeSingleWriter(value: 0)
      let armer = gateArmer(box)
      let dropper = DispatchQueue(label: "dropper")
      let perThread = 600
      let expected = Counter()
      await onThreads(3) { t in
        for i in 0..<perThread {
          switch (i + t) % 5 {
          case 0:
            expected.add(2)
            box.writeNext { proxy in
              proxy.write += 1
              let moved = proxy
              dropper.async {
                moved.write += 1
                _ = moved
              }
            }
          case 1:
            expected.add(2)
            box.writeNext { proxy in
              proxy.write += 1
              let holder = DropsProxyOnDeinit()
              holder.proxy = proxy
              dropper.async { _ = holder }
            }
          case 2:
            expected.add(1)
            box.withWriter { $0 += 1 }
          case 3:
            if box.tryWrite({ $0 += 1 }) != nil { expected.add(1) }
          default:
            expected.add(1)
            box.writeNext { proxy in
              attackSpin(30_000)
              proxy.write += 1
            }
          }
        }
      }
      dropper.sync {}
      // The last drops may still be serving on the dropper: wait for the writer.
      box.withWriter { _ in }
      armer.stop()
      box.withWriter { _ in }
      preconditionSettled(box, value: expected.load())
      exit(7)
    }
    expectExit(result, 7)
  }

  /// A server that runs long bodies is taken over by successors (writeNext from other
  /// threads after a millisecond) while withWriter waiters queue and poll the gate.
  @Test func successorsTakeOverAGatedServerWhileWaitersPoll() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(40, "successors under the gate")
      let box = ThreadSafeSingleWriter(value: 0)
      let armer = gateArmer(box)
      let perThread = 400
      await onThreads(4) { t in
        for i in 0..<perThread {
          if t == 3 && i % 4 == 0 {
            box.withWriter { $0 += 1 }
          } else {
            box.writeNext { proxy in
              attackSpin(t == 0 ? 200_000 : 5_000)
              proxy.write += 1
            }
          }
        }
      }
      armer.stop()
      preconditionSettled(box, value: 4 * perThread)
      exit(7)
    }
    expectExit(result, 7)
  }

  /// Tasks on the cooperative pool call withWriter (blocking), await write,
  /// writeUnlessCancelled, checkout() and tryWrite, while threads queue writeNext and
  /// observers consume changes(); the gate is re-armed all along.
  @Test func theCooperativePoolMixesEverythingWithTheGateArmed() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(40, "cooperative pool under the gate")
      let box = ThreadSafeSingleWriter(value: 0)
      let armer = gateArmer(box)
      let expected = Counter()
      let observer = Task {
        var seen = 0
        for await _ in box.changes() {
          seen += 1
          if seen > 50 { break }
        }
      }
      let semaphore = DispatchSemaphore(value: 0)
      Task {
        await withTaskGroup(of: Void.self) { group in
          for t in 0..<12 {
            group.addTask {
              for i in 0..<150 {
                switch (i + t) % 6 {
                case 0:
                  box.withWriter { $0 += 1 }
                  expected.add(1)
                case 1:
                  await box.write { $0 += 1 }
                  expected.add(1)
                case 2:
                  if (try? await box.writeUnlessCancelled({ $0 += 1 })) != nil { expected.add(1) }
                case 3:
                  if let proxy = try? await box.checkout() {
                    proxy.write += 1
                    expected.add(1)
                  }
                case 4:
                  if box.tryWrite({ $0 += 1 }) != nil { expected.add(1) }
                default:
                  box.writeNext { $0.write += 1 }
                  expected.add(1)
                }
              }
            }
          }
        }
        semaphore.signal()
      }
      let threads = DispatchGroup()
      for _ in 0..<2 {
        threads.enter()
        Thread.detachNewThread {
          for i in 0..<500 {
            if i % 3 == 0 {
              box.withWriter { $0 += 1 }
            } else {
              box.writeNext { $0.write += 1 }
            }
            expected.add(1)
          }
          threads.leave()
        }
      }
      semaphore.wait()
      threads.wait()
      armer.stop()
      observer.cancel()
      preconditionSettled(box, value: expected.load())
      exit(7)
    }
    expectExit(result, 7)
  }

  /// Queued `await writeUnlessCancelled` and `checkout()` are cancelled around their turn
  /// while a gated server runs the queue and a queued withWriter polls the gate.
  @Test func cancellationAtTheTurnWithAGatedServer() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(40, "cancellation under the gate")
      let box = ThreadSafeSingleWriter(value: 0)
      let ran = Counter()
      for round in 0..<60 {
        box.lock.wantGate()
        var held = box.writer
        var tasks: [Task<Void, Never>] = []
        for i in 0..<8 {
          tasks.append(
            Task {
              if i % 2 == 0 {
                if (try? await box.writeUnlessCancelled({ $0 += 1 })) != nil { ran.add(1) }
              } else if let proxy = try? await box.checkout() {
                proxy.write += 1
                ran.add(1)
              }
            })
        }
        box.writeNext { proxy in
          attackSpin(UInt64(round % 4) * 300_000)
          proxy.write += 1
        }
        let waiter = DispatchGroup()
        waiter.enter()
        Thread.detachNewThread {
          box.withWriter { $0 += 1 }
          waiter.leave()
        }
        usleep(UInt32(round % 3) * 700)
        for (i, task) in tasks.enumerated() where i % 3 != 0 { task.cancel() }
        held = nil
        _ = held
        for task in tasks { blockUntilDone(task) }
        waiter.wait()
        preconditionSettled(box, value: ran.load() + 2 * (round + 1), "round \(round): ")
      }
      exit(7)
    }
    expectExit(result, 7)
  }

  /// Everything idle after a gated mix: the container is freed.
  @Test func theContainerIsFreedAfterAGatedMix() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      attackWatchdog(20, "freeing after the gate")
      weak var weakBox: ThreadSafeSingleWriter<Int>?
      do {
        let box = ThreadSafeSingleWriter(value: 0)
        weakBox = box
        box.lock.wantGate()
        await onThreads(3) { t in
          for i in 0..<300 {
            if (i + t) % 2 == 0 {
              box.withWriter { $0 += 1 }
            } else {
              box.writeNext { proxy in
                let kept = proxy
                DispatchQueue.global().async { kept.write += 1 }
              }
            }
          }
        }
        precondition(eventually { box.read == 900 }, "value \(box.read)")
        box.withWriter { _ in }
        if let failure = gateIdleFailure(box) { preconditionFailure(failure) }
      }
      _ = eventually(atMost: 60) { weakBox == nil }
      precondition(weakBox == nil, "the container leaked")
      exit(7)
    }
    expectExit(result, 7)
  }
}
