import Foundation
import Testing

@testable import SingleWriter

// Accesses through a held proxy begin from a guess of the state word (`accessWord`) and end
// from the word they installed. Every bit the guess may miss changes under them here: a
// subscription toggles `observed` (and `dirty`), writeNext from other threads sets `queued`
// and hands the checkout on, readers take slots, withWriter parks, transactions commit,
// and two containers' proxies alternate. Debug builds check every word the accesses
// install against `beginAccess` and `endAccess`; the sum checks that no write is lost.
@Suite struct AttackPassAccessHintStress {
  @Test func accessesFromAStaleGuessInstallWhatTheTransitionsWould() async {
    let a = ThreadSafeSingleWriter(value: 0)
    let b = ThreadSafeSingleWriter(value: 0)
    let rounds = 3_000
    let perRound = 20
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        for _ in 0..<rounds {
          let pa = try! await a.checkout()
          let pb = try! await b.checkout()
          for _ in 0..<perRound {
            pa.write += 1
            pb.write += 1
          }
        }
      }
      group.addTask {
        // Blocking writes on a thread of their own: on the pool they could starve the
        // tasks that hold a checkout across an `await`.
        await onThreads(1) { _ in
          for _ in 0..<rounds {
            a.writeNext { $0.write += 1 }
            b.withWriter { $0 += 1 }
            a.transaction { $0 += 1 }
          }
        }
      }
      group.addTask {
        for _ in 0..<rounds {
          let stream = a.changes()
          var iterator = stream.makeAsyncIterator()
          _ = a.read
          _ = b.read
          _ = await iterator.next()
        }
      }
      group.addTask {
        for _ in 0..<rounds {
          await a.write { $0 += 1 }
          try! await b.transaction { value in
            await Task.yield()
            value += 1
          }
        }
      }
    }
    await a.drained()
    await b.drained()
    #expect(a.read == rounds * (perRound + 3))
    #expect(b.read == rounds * (perRound + 2))
  }
}
