import SingleWriter
import Testing

// What `Mutex` accepts in Swift 6 mode, accepted here too, from a client's point of view:
// this file imports the library as a client does, without `@testable`.

/// A model class, not `Sendable`, as most are.
final class Model {
  var count = 0
}

/// A resource that must not be copied.
struct FileDescriptor: ~Copyable {
  var raw: Int32
  var closed = false
}

/// A global container of a non-`Sendable` value, in a library file.
let sharedModel = ThreadSafeSingleWriter(value: Model())

/// A `Sendable` class that stores a container of non-`Sendable` values.
final class ModelServer: Sendable {
  let pending = ThreadSafeSingleWriter(value: [Model]())
}

struct TypedFailure: Error {}

@Suite struct TypingTests {
  @Test func aNonSendableValueIsSharedByTasks() async {
    let box = ThreadSafeSingleWriter(value: Model())
    async let first: Void = Task { for _ in 0..<1_000 { box.withWriter { $0.count += 1 } } }.value
    async let second: Void = Task { for _ in 0..<1_000 { await box.write { $0.count += 1 } } }
      .value
    _ = await (first, second)
    #expect(box.withWriter { $0.count } == 2_000)
  }

  @Test func aGlobalContainerOfANonSendableValue() {
    let before = sharedModel.withWriter { model -> Int in
      model.count += 1
      return model.count
    }
    #expect(before >= 1)
  }

  @Test func aValueMovedOutOfAClosureWriteIsSentOn() async {
    let server = ModelServer()
    server.pending.withWriter { $0.append(Model()) }
    let taken = server.pending.withWriter { models -> [Model] in
      let out = models
      models = []
      return out
    }
    let count = await Task { taken.count }.value  // sent to another task
    #expect(count == 1)
    #expect(server.pending.withWriter { $0.count } == 0)
  }

  @Test func aNonCopyableValueIsWrittenInPlaceAndReadByClosure() async {
    let descriptor = ThreadSafeSingleWriter(value: FileDescriptor(raw: 3))
    descriptor.withWriter { $0.raw = 4 }
    #expect(descriptor.tryWrite { $0.closed = true } != nil)
    await descriptor.write { $0.raw += 1 }
    #expect(descriptor.read { $0.raw } == 5)
    #expect(descriptor.read { $0.closed })
  }

  @Test func awaitWriteNeedsNoTryAndThrowsOnlyTheBodysError() async {
    let box = ThreadSafeSingleWriter(value: 0)
    await box.write { $0 += 1 }
    await #expect(throws: TypedFailure.self) {
      try await box.write { _ throws(TypedFailure) in throw TypedFailure() }
    }
    #expect(box.read == 1)
  }

  @Test func aClosureReadReturnsWhatItBorrows() {
    let catalog = ThreadSafeSingleWriter(value: ["apple": 3, "pear": 5])
    #expect(catalog.read { $0["apple"] } == 3)
    #expect(catalog.read { $0.count } == 2)
  }

  @Test func bothContainersStreamsKeepTheirNames() async {
    let shared = ThreadSafeSingleWriter(value: 1)
    let stream: ThreadSafeSingleWriter<Int>.Changes<Int> = shared.changes()
    requireSendable(stream)  // the thread-safe container's stream crosses tasks
    #expect(await Task { await stream.first { _ in true } }.value == 1)
    let plain = SingleWriter(value: 2)
    let local: SingleWriter<Int>.Changes<Int> = plain.changes()
    var iterator: SingleWriter<Int>.Changes<Int>.Iterator = local.makeAsyncIterator()
    #expect(await iterator.next() == 2)
  }
}

func requireSendable<T: Sendable>(_: T) {}
