import Dispatch
import Foundation
import Testing

@testable import SingleWriter

/// `print(container)` shows the value and the writer's state, and describing never waits
/// or stops the program, even from inside a write.
@Suite struct DescriptionTests {
  struct Named: Sendable {
    var name: String
  }

  // MARK: SingleWriter

  @Test func singleWriterShowsTheValueWhenFree() {
    let counter = SingleWriter(value: 42)
    #expect(counter.description == "SingleWriter<Int>(42)")
    #expect("\(counter)" == "SingleWriter<Int>(42)")
  }

  @Test func singleWriterShowsTheCheckoutAndTheQueue() {
    let counter = SingleWriter(value: 42)
    var held = counter.writer
    counter.writeNext { $0.write += 1 }
    counter.writeNext { $0.write += 1 }
    #expect(counter.description == "SingleWriter<Int>(42, checked out, 2 queued)")
    #expect(held?.description == "WriterProxy<Int>(42, 2 queued)")
    held = nil
    #expect(counter.description == "SingleWriter<Int>(44)")
  }

  @Test func singleWriterQuotesStringsLikeDebugPrint() {
    let name = SingleWriter(value: "Joe")
    #expect(name.description == #"SingleWriter<String>("Joe")"#)
    let user = SingleWriter(value: Named(name: "Joe"))
    #expect(user.description.hasSuffix(#"Named(name: "Joe"))"#))
  }

  @Test func singleWriterDescribedInsideItsOwnWritesShowsTheWriteSoFar() {
    let counter = SingleWriter(value: 1)
    var seen: [String] = []
    _ = counter.tryWrite { value in
      value = 2
      seen.append(counter.description)
    }
    counter.writeNext { proxy in
      proxy.write = 3
      seen.append(counter.description)
      seen.append(proxy.description)
    }
    #expect(
      seen == [
        "SingleWriter<Int>(2, checked out)",
        "SingleWriter<Int>(3, checked out)",
        "WriterProxy<Int>(3)",
      ])
  }

  @Test func debugDescriptionsAddTheAddress() {
    let counter = SingleWriter(value: 7)
    let address = "\(Unmanaged.passUnretained(counter).toOpaque())"
    #expect(counter.debugDescription == "SingleWriter<Int> \(address) (7)")
    let proxy = counter.writer!
    let proxyAddress = "\(Unmanaged.passUnretained(proxy).toOpaque())"
    #expect(proxy.debugDescription == "WriterProxy<Int> \(proxyAddress) (7)")
    #expect(String(reflecting: counter) == "SingleWriter<Int> \(address) (7, checked out)")
  }

  // MARK: ThreadSafeSingleWriter

  @Test func threadSafeShowsTheValueTheCheckoutAndTheQueue() {
    let counter = ThreadSafeSingleWriter(value: 42)
    #expect(counter.description == "ThreadSafeSingleWriter<Int>(42)")
    var held = counter.writer
    counter.writeNext { $0.write += 1 }
    counter.writeNext { $0.write += 1 }
    #expect(
      counter.description == "ThreadSafeSingleWriter<Int>(42, checked out, writes queued)")
    #expect(held?.description == "ThreadSafeWriterProxy<Int>(42, writes queued)")
    held = nil
    #expect(counter.description == "ThreadSafeSingleWriter<Int>(44)")
  }

  @Test func threadSafeDescribedInsideItsOwnWritesNeverStops() {
    let counter = ThreadSafeSingleWriter(value: 1)
    let seen = Locked<[String]>([])
    // `read` would stop the program inside these two; the description says why it
    // cannot show the value instead.
    _ = counter.tryWrite { _ in seen.withLock { $0.append(counter.description) } }
    counter.withWriter { _ in seen.withLock { $0.append(counter.description) } }
    // A writeNext body holds the value and may read it, as `read` does there.
    counter.writeNext { proxy in
      proxy.write = 3
      seen.withLock { $0.append(counter.description) }
      seen.withLock { $0.append(proxy.description) }
    }
    #expect(
      seen.withLock { $0 } == [
        "ThreadSafeSingleWriter<Int>(<being written>, checked out)",
        "ThreadSafeSingleWriter<Int>(<being written>, checked out)",
        "ThreadSafeSingleWriter<Int>(3, checked out)",
        "ThreadSafeWriterProxy<Int>(3)",
      ])
  }

  @Test func threadSafeDescriptionDoesNotWaitForAnotherThreadsWrite() async {
    let counter = ThreadSafeSingleWriter(value: 0)
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let writer = Thread {
      counter.withWriter { value in
        value = 1
        entered.signal()
        release.wait()  // holds the value until the description has been taken
      }
    }
    writer.start()
    entered.wait()
    let during = counter.description
    release.signal()
    #expect(during == "ThreadSafeSingleWriter<Int>(<being written>, checked out)")
    // withWriter has returned once the writer is free again.
    while counter.writer == nil { await Task.yield() }
    #expect(counter.description == "ThreadSafeSingleWriter<Int>(1)")
  }

  @Test func threadSafeDebugDescriptionAddsTheAddress() {
    let counter = ThreadSafeSingleWriter(value: "a")
    let address = "\(Unmanaged.passUnretained(counter).toOpaque())"
    #expect(counter.debugDescription == #"ThreadSafeSingleWriter<String> \#(address) ("a")"#)
  }

  @Test func describingWhileOtherThreadsWriteIsSafe() async {
    let counter = ThreadSafeSingleWriter(value: 0)
    let stop = Locked(false)
    let writers = (0..<2).map { _ in
      Task.detached {
        while !stop.withLock({ $0 }) {
          counter.withWriter { $0 += 1 }
          counter.writeNext { $0.write += 1 }
          if let proxy = counter.writer { proxy.write += 1 }
        }
      }
    }
    var described = 0
    for _ in 0..<2_000 {
      let text = counter.description
      #expect(text.hasPrefix("ThreadSafeSingleWriter<Int>("))
      described += 1
    }
    stop.withLock { $0 = true }
    for writer in writers { await writer.value }
    #expect(described == 2_000)
  }
}
