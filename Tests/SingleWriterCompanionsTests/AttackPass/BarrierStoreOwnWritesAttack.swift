import Foundation
import SingleWriterCompanions
import Testing

// BarrierStore: "Operations called from one thread take effect in the order they were
// called, whatever their form: a read sees every write the same thread started before it,
// even one whose completion has not run yet." Mixed forms on the barrier queue, with
// another thread writing other keys meanwhile.

@Suite struct AttackPassBarrierStoreOwnWrites {
  @Test func aReadOfEveryFormSeesTheCallbackWritesThisThreadStartedBeforeIt() async {
    let result = await #expect(
      processExitsWith: atkExpect(.success), observing: [\.standardErrorContent]
    ) {
      attackWatchdog(60, "barrier store order")
      let store = BarrierStore<Int, Int>(backing: .barrierQueue)
      let noise = Thread { for i in 0..<200_000 { store.setValue(i, forKey: 1 + i % 7) } }
      noise.start()
      var wrong = 0
      var first = ""
      for i in 1...2_000 {
        store.setValue(i, forKey: 0) { _, _ in }
        let sync = store.value(forKey: 0)
        let async = await store.valueAsync(forKey: 0)
        store.removeValue(forKey: 0) { _, _ in }
        let afterRemove = store.value(forKey: 0)
        store.setValue(-i, forKey: 0) { _, _ in }
        let viaCallback = await withCheckedContinuation { continuation in
          store.value(forKey: 0) { _, value in continuation.resume(returning: value) }
        }
        if sync != i || async != i || afterRemove != nil || viaCallback != -i {
          wrong += 1
          if first.isEmpty {
            first =
              "round \(i): sync \(String(describing: sync)), async \(String(describing: async)), after remove \(String(describing: afterRemove)), callback \(String(describing: viaCallback))"
          }
        }
      }
      attackErr("\(wrong) wrong rounds\n")
      atkEnd(breakingIf: wrong > 0, first)
    }
    atkDiag(result)
    #expect(!standardError(result).contains("BREAK"), "\(exitReport(result))")
  }
}
