import Dispatch
import Foundation
import SingleWriter
import SingleWriterCompanions
import Testing

/// A continuation that is resumed once, by whichever comes first.
private final class ReplySlot<R: Sendable>: Sendable {
  let continuation = Locked<CheckedContinuation<R?, Never>?>(nil)
  func resume(_ value: R?) { continuation.withLock { $0.take() }?.resume(returning: value) }
}

/// Calls `send` with a function to answer with, and waits for the answer; `nil` if the
/// test is cancelled first (by its time limit), so a lost message fails instead of hanging.
private func reply<R: Sendable>(
  of _: R.Type, _ send: (@escaping @Sendable (R) -> Void) -> Void
) async -> R? {
  let slot = ReplySlot<R>()
  return await withTaskCancellationHandler {
    await withCheckedContinuation { continuation in
      slot.continuation.withLock { $0 = continuation }
      if Task.isCancelled { slot.resume(nil) }
      send { slot.resume($0) }
    }
  } onCancel: {
    slot.resume(nil)
  }
}

@Suite struct ConfinedTests {
  @Test func tellsFromSeveralThreadsArriveInOrderAndNoneIsLost() async {
    let journal = Confined(Journal())
    let senders = 4
    let perSender = 2_500
    await onThreads(senders) { sender in
      for sequence in 0..<perSender {
        journal.tell { $0.pairs.append(Journal.Pair(sender: sender, sequence: sequence)) }
      }
    }
    let pairs = await journal.ask { $0.pairs }
    #expect(pairs.count == senders * perSender)
    for sender in 0..<senders {
      let sequences = pairs.filter { $0.sender == sender }.map(\.sequence)
      #expect(sequences == Array(0..<perSender), "sender \(sender)'s messages kept their order")
    }
  }

  @Test(arguments: [false, true])
  func messagesNeverOverlap(onAConcurrentQueue: Bool) async {
    // Even a concurrent queue runs one message at a time: the mailbox drains serially.
    let queue =
      onAConcurrentQueue
      ? DispatchQueue(label: "test.concurrent", attributes: .concurrent) : nil
    let journal = Confined(Journal(), queue: queue)
    let overlap = Overlap()
    await onThreads(4) { _ in
      for _ in 0..<2_000 {
        journal.tell {
          overlap.enter()
          $0.count += 1  // a plain write: ThreadSanitizer reports it if two overlap
          overlap.leave()
        }
      }
    }
    #expect(await journal.ask { $0.count } == 8_000)
    #expect(overlap.most.load() == 1)
  }

  @Test func askReturnsAValueThatSeesEveryEarlierTell() async {
    let journal = Confined(Journal())
    for _ in 0..<1_000 { journal.tell { $0.count += 1 } }
    #expect(await journal.ask { $0.count } == 1_000)
    journal.tell { $0.entries.append("after") }
    #expect(await journal.ask { "\($0.count) \($0.entries)" } == #"1000 ["after"]"#)
  }

  // Nothing else is sent, so this also checks that the drain comes back for a message
  // that arrived while it was busy; if it does not, the time limit ends the wait.
  @Test(.timeLimit(.minutes(1)))
  func aTellFromInsideAMessageRunsAfterItNotInline() async {
    let journal = Confined(Journal())
    let entries = await reply(of: [String].self) { answer in
      journal.tell { object in
        object.entries.append("outer begins")
        journal.tell {
          $0.entries.append("inner")
          answer($0.entries)
        }
        object.entries.append("outer ends")
      }
    }
    #expect(entries == ["outer begins", "outer ends", "inner"])
  }

  @Test func anOwnQueueIsSerialAndNamedAfterTheType() async {
    let journal = Confined(Journal())
    #expect(journal.queue.label == "singlewriter.confined.Journal")
    journal.queue.setSpecific(key: Sentinel.key, value: "own queue")
    #expect(await journal.ask { _ in DispatchQueue.getSpecific(key: Sentinel.key) } == "own queue")
  }

  @Test func aConfinedOnTheMainQueueRunsThere() async {
    // On Linux the main queue need not run on the main thread, so check the queue.
    DispatchQueue.main.setSpecific(key: Sentinel.key, value: "main queue")
    let view = Confined(Journal(), queue: .main)
    #expect(await view.ask { _ in DispatchQueue.getSpecific(key: Sentinel.key) } == "main queue")
  }

  @Test func theOnQueueChecksPassInsideAMessage() async {
    let journal = Confined(Journal())
    await journal.ask { _ in
      journal.assertOnQueue()
      journal.preconditionOnQueue()
    }
  }

  @Test func preconditionOnQueueStopsOutsideAMessage() async {
    await #expect(processExitsWith: .failure) {
      Confined(Journal()).preconditionOnQueue()
    }
  }

  @Test func preconditionOnQueueStopsOnTheQueueOutsideAMessage() async {
    // Being on the queue is not enough: only a message of this Confined may touch it.
    await #expect(processExitsWith: .failure) {
      let journal = Confined(Journal())
      let done = DispatchSemaphore(value: 0)
      journal.queue.async {
        journal.preconditionOnQueue()
        done.signal()
      }
      done.wait()
    }
  }

  @Test func confiningAnObjectTwiceStops() async {
    await #expect(processExitsWith: .failure) {
      let thing = SharedThing()
      let first = Confined(thing)
      let second = Confined(thing)
      withExtendedLifetime((first, second)) {}
    }
  }

  @Test func anObjectCanBeConfinedAgainOnceItsConfinedIsGone() async {
    let thing = SharedThing()
    let queue = DispatchQueue(label: "test.again")
    weak var gone: Confined<SharedThing>?
    do {
      let first = Confined(thing, queue: queue)
      gone = first
      first.tell { _ in }
    }
    // The last message holds the Confined until it has run; wait for the queue.
    await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    #expect(gone == nil)
    let second = Confined(thing, queue: queue)
    #expect(await second.ask { $0 === thing })
  }

  @Test func aFreedObjectsRecycledAddressIsNotMistakenForIt() async {
    let queue = DispatchQueue(label: "test.recycle")
    var identities = Set<ObjectIdentifier>()
    for _ in 0..<200 {
      let object = Journal()
      identities.insert(ObjectIdentifier(object))
      _ = Confined(object, queue: queue)
      // The object is freed on its queue; once it is, the next one may get its address.
      await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
    #expect(identities.count < 200, "addresses were reused, and none was refused")
  }

  @Test func theObjectIsFreedOnItsQueue() async {
    let queue = DispatchQueue(label: "test.free")
    queue.setSpecific(key: Sentinel.key, value: "confined queue")
    let freedOn = Locked<String?>("not freed")
    // No message is pending, so the Confined dies here and queues the release first.
    _ = Confined(Sentinel { label in freedOn.withLock { $0 = label } }, queue: queue)
    await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    #expect(freedOn.withLock { $0 } == "confined queue")
  }
}

extension ConfinedTests {
  /// What a confined object saw, in the order it saw it.
  final class Journal {
    var entries: [String] = []
    var pairs: [Pair] = []
    var count = 0

    struct Pair: Equatable, Sendable {
      var sender: Int
      var sequence: Int
    }
  }

  /// An object that can be confined twice, because being `Sendable` lets the caller keep it.
  final class SharedThing: Sendable {}

  /// Counts how many messages are running at once, and the most it has seen.
  final class Overlap: Sendable {
    let inFlight = Counter()
    let most = Counter()

    func enter() { most.raise(to: inFlight.add(1)) }

    func leave() { inFlight.subtract(1) }
  }

  /// Records on which queue an object was freed.
  final class Sentinel {
    static let key = DispatchSpecificKey<String>()
    let record: @Sendable (String?) -> Void
    init(_ record: @escaping @Sendable (String?) -> Void) { self.record = record }
    deinit { record(DispatchQueue.getSpecific(key: Sentinel.key)) }
  }
}
