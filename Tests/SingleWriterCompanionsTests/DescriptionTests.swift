import Dispatch
import Foundation
import SingleWriterCompanions
import Testing

/// `print(companion)` names its types and how it works, and never takes its lock.
@Suite struct DescriptionTests {
  final class Model {}

  @Test func barrierStoreNamesItsTypesAndBacking() {
    #expect(BarrierStore<String, Int>().description == "BarrierStore<String, Int>(readWriteLock)")
    let queued = BarrierStore<Int, Int>(backing: .barrierQueue)
    #expect("\(queued)" == "BarrierStore<Int, Int>(barrierQueue)")
    let address = "\(Unmanaged.passUnretained(queued).toOpaque())"
    #expect(queued.debugDescription == "BarrierStore<Int, Int> \(address) (barrierQueue)")
  }

  @Test func confinedNamesItsTypeAndQueue() {
    let model = Confined(Model())
    #expect(model.description == #"Confined<Model>(queue: "singlewriter.confined.Model")"#)
    let onMain = Confined(Model(), queue: .main)
    #expect(onMain.description == #"Confined<Model>(queue: "com.apple.main-thread")"#)
  }
}
