import Dispatch
import Foundation
import SingleWriter
import SingleWriterAtomics
import SingleWriterPersistence
import Testing

// The helpers the persistence tests share: the values saved, folders of their own, and a
// gate that holds a save part-way.

/// A small settings value, as an app keeps.
struct Settings: Codable, Sendable, Equatable {
  var fontSize = 12
  var theme = "light"
}

/// A value whose fields a single write sets together: `b == a` and `padding` has `a % 997`
/// extra characters whenever a write has ended, so a torn save shows.
struct Linked: Codable, Sendable, Equatable {
  var a = 0
  var b = 0
  var padding = ""

  mutating func set(_ n: Int) {
    a = n
    b = n
    padding = String(repeating: "x", count: 4_000 + n % 997)
  }

  var isConsistent: Bool { a == b && padding.count == (a == 0 ? 0 : 4_000 + a % 997) }
}

/// A new, empty folder for one test, removed by nobody: each test has its own.
func makeFolder(_ name: String = #function) -> URL {
  let folder = FileManager.default.temporaryDirectory
    .appendingPathComponent("SingleWriterPersistenceTests")
    .appendingPathComponent(
      "\(name.prefix { $0.isLetter || $0.isNumber })-\(UUID().uuidString)")
  try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
  return folder
}

/// The file's text, or `nil` if there is none.
func text(of url: URL) -> String? {
  (try? Data(contentsOf: url)).map { String(decoding: $0, as: UTF8.self) }
}

/// The value a file holds, decoded as a fresh process would.
func decoded<Value: Decodable>(_ type: Value.Type, at url: URL) throws -> Value {
  try JSONDecoder().decode(type, from: Data(contentsOf: url))
}

/// Polls `condition` every millisecond until it holds. Counted in polls, not wall time, so
/// that a loaded machine stalls the poller and what it waits for alike; after `seconds`
/// of them it records an issue and returns, so a hang fails its test instead of the run.
/// Throws once the test is cancelled: a poll that ignored that would spin without end.
func waitUntil(
  atMost seconds: Int = 120, sourceLocation: SourceLocation = #_sourceLocation,
  _ condition: @escaping @Sendable () -> Bool
) async throws {
  for _ in 0..<seconds * 1_000 {
    if condition() { return }
    try await Task.sleep(nanoseconds: 1_000_000)
  }
  if !condition() {
    Issue.record("still not so after \(seconds) s of polls", sourceLocation: sourceLocation)
  }
}

/// Whether `body` returns within `seconds`: a watchdog for a hang, not a timing bound.
/// Neither task is awaited, so a `body` that never returns does not hang the test.
func finishes(
  within seconds: UInt64, _ body: @escaping @Sendable () async throws -> Void
) async -> Bool {
  let answered = Locked(false)
  return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
    @Sendable func answer(_ finished: Bool) {
      if answered.withLock({ done in
        defer { done = true }; return !done
      }) {
        continuation.resume(returning: finished)
      }
    }
    Task {
      _ = try? await body()
      answer(true)
    }
    Task {
      try? await Task.sleep(nanoseconds: seconds * 1_000_000_000)
      answer(false)
    }
  }
}

/// A store of an `Int` in a folder of its own, saved through `encoder`.
func intStore(_ encoder: RecordingEncoder<Int>, interval: Duration) throws -> PersistedState<Int> {
  try PersistedState(
    file: makeFolder().appendingPathComponent("n.json"), default: 0,
    encode: encoder.encode, decode: { try JSONDecoder().decode(Int.self, from: $0) },
    minimumSaveInterval: interval)
}

/// Saves 1 with 2 written during its save, a save that a write outran; returns once the
/// saver rests unsubscribed after it (2 is not on disk yet), or, if the pool starved this
/// poller for a rest of seconds, once it has saved again.
func outrunASave(_ store: PersistedState<Int>, _ encoder: RecordingEncoder<Int>) async throws {
  encoder.hold()
  store.state.writeNext { $0.write = 1 }
  await encoder.waitUntilHeld()
  store.state.withWriter { $0 = 2 }
  encoder.release()
  try await waitUntil {
    (store.saverIsResting && !store.state.isObserved) || encoder.encoded.current.count > 1
  }
}

/// An async transaction on `store` that drafts 3, stays open until `close()`, then commits
/// 4. After `polls` milliseconds it closes by itself, so that a flush that waits for its
/// body fails its test instead of hanging.
final class DraftTransaction: Sendable {
  private let closed = Locked(false)
  private let open = Locked(false)
  let task: Task<Void, any Error>

  init(_ store: PersistedState<Int>, polls: Int) {
    let (closed, open) = (closed, open)
    task = Task.detached {
      try await store.state.transaction { value in
        value = 3  // a draft: never saved before the commit
        open.withLock { $0 = true }
        var left = polls
        while !closed.current, left > 0 {
          try? await Task.sleep(nanoseconds: 1_000_000)
          left -= 1
        }
        open.withLock { $0 = false }
        value = 4
      }
    }
  }

  var isOpen: Bool { open.current }
  func close() { closed.withLock { $0 = true } }
}

/// Flushes while `transaction` is open over the write of 2: the flush must not wait for
/// its body, the disk must hold 2 and no draft; then the transaction commits 4, which the
/// next flush saves.
func flushPastAnOpenTransaction(
  _ store: PersistedState<Int>, _ encoder: RecordingEncoder<Int>,
  _ transaction: DraftTransaction
) async throws {
  try await store.saved()
  let openAtFlush = transaction.isOpen
  let onDisk = try decoded(Int.self, at: store.file)
  transaction.close()
  try await transaction.task.value
  #expect(openAtFlush, "saved() waited for the transaction's body")
  #expect(onDisk == 2)
  #expect(!encoder.encoded.withLock { $0 }.contains(3), "a draft was saved")
  try await store.saved()
  #expect(try decoded(Int.self, at: store.file) == 4)
}

/// The names in `folder`.
func names(in folder: URL) -> [String] {
  ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
}

/// A value behind an `NSLock`, for the tests' own bookkeeping across threads.
final class Locked<Value>: @unchecked Sendable {
  // Sendable: `value` is only touched under `lock`.
  private let lock = NSLock()
  private var value: Value
  init(_ value: Value) { self.value = value }
  func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    try lock.withLock { try body(&value) }
  }
  var current: Value { withLock { $0 } }
}

/// An `encode` that records every value it is given and, while `held`, stops in the save
/// until `release()`: a save part-way, for as long as a test needs.
final class RecordingEncoder<Value: Encodable & Sendable>: @unchecked Sendable {
  // Sendable: the semaphores are thread-safe, the rest is behind `Locked`.
  let encoded = Locked<[Value]>([])
  private let holding = Locked(false)
  private let entered = DispatchSemaphore(value: 0)
  private let gate = DispatchSemaphore(value: 0)

  /// The next save stops in `encode` until `release()`.
  func hold() { holding.withLock { $0 = true } }

  /// Waits until a held save has stopped in `encode`.
  func waitUntilHeld() async {
    await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        self.entered.wait()
        continuation.resume()
      }
    }
  }

  func release() { gate.signal() }

  var encode: @Sendable (Value) throws -> Data {
    { value in
      self.encoded.withLock { $0.append(value) }
      if self.holding.withLock({ held in
        defer { held = false }; return held
      }) {
        self.entered.signal()
        self.gate.wait()
      }
      return try JSONEncoder().encode(value)
    }
  }
}

// MARK: - Child processes

// A wait that could hang runs in an exit test, with a watchdog that exits with status 3
// and prints "WATCHDOG", so that a hang is reported as such instead of hanging the runner.

/// How long a child that printed nothing may run before its watchdog calls it hung: far
/// past anything a loaded machine does to a test that passes.
let hangBound: Double = 120

/// Exits the process with status 3 once the library has printed a message and `seconds`
/// have passed, or after `hangBound` if it has printed none: a hang shows as exit code 3,
/// and load cannot cut short a child that is merely slow.
func childWatchdog(_ seconds: Double, _ label: String) {
  let start = DispatchTime.now().uptimeNanoseconds
  Thread.detachNewThread {
    Thread.sleep(forTimeInterval: seconds)
    let end = start + UInt64(max(seconds, hangBound) * 1e9)
    while sw_printed_error_count() == 0, DispatchTime.now().uptimeNanoseconds < end {
      usleep(10_000)
    }
    FileHandle.standardError.write(Data("WATCHDOG: \(label) hung\n".utf8))
    _exit(3)
  }
}

/// Releases `held` on another thread once the library has printed a message (the warning
/// a test waits for), or after `hangBound`: a warning that load delayed past a fixed
/// release time would never be printed, since the wait it is about would have ended.
func releaseAfterAWarning<Value: Sendable>(_ held: Locked<ThreadSafeWriterProxy<Value>?>) {
  let printed = sw_printed_error_count()
  let end = DispatchTime.now().uptimeNanoseconds + UInt64(hangBound * 1e9)
  Thread.detachNewThread {
    while sw_printed_error_count() == printed, DispatchTime.now().uptimeNanoseconds < end {
      usleep(10_000)
    }
    held.withLock { $0 = nil }
  }
}

/// The text a child wrote to standard error.
func standardError(_ result: ExitTest.Result?) -> String {
  result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
}

/// Signals `freed` from its `deinit`: kept only by an `encode`, it tells that the saver
/// that kept it is gone.
final class Sentinel: Sendable {
  let freed: DispatchSemaphore
  init(_ freed: DispatchSemaphore) { self.freed = freed }
  deinit { freed.signal() }
}

/// An `encode` (recording into `encoder`) that signals `freed` once the saver that keeps
/// it is gone.
func encodeSignalling(
  _ freed: DispatchSemaphore, recording encoder: RecordingEncoder<Int> = .init()
) -> @Sendable (Int) throws -> Data {
  let sentinel = Sentinel(freed)
  let encode = encoder.encode
  return { value in
    withExtendedLifetime(sentinel) {}
    return try encode(value)
  }
}

/// Waits until the saver that kept `encodeSignalling(freed)` is freed.
func saverEnded(_ freed: DispatchSemaphore) async {
  await withCheckedContinuation { continuation in
    DispatchQueue.global().async {
      freed.wait()
      continuation.resume()
    }
  }
}

/// Writes `rounds` increments from `tasks` tasks, each in one of the first `kinds` forms
/// (closure write, `await write`, `writeNext` then `drained()`, a proxy, `tryWrite`), and
/// flushes after each: returns how many flushes found less than their own write on disk.
func storm(_ store: PersistedState<Int>, tasks: Int, rounds: Int, kinds: Int) async -> Int {
  let late = Locked(0)
  let file = store.file
  await withTaskGroup(of: Void.self) { group in
    for task in 0..<tasks {
      group.addTask {
        for round in 0..<rounds {
          var mine = 0
          switch (task + round) % kinds {
          case 0:
            store.state.withWriter {
              $0 += 1; mine = $0
            }
          case 1:
            mine = await store.state.write {
              $0 += 1; return $0
            }
          case 2:
            let box = Locked(0)
            store.state.writeNext {
              $0.write += 1; box.withLock { [v = $0.write] in $0 = v }
            }
            await store.state.drained()
            mine = box.current
          case 3:
            // A proxy, released before the flush; retried while the writer is out.
            while true {
              if let proxy = store.state.writer {
                proxy.write += 1
                mine = proxy.write
                break
              }
              await Task.yield()
            }
          default:
            while true {
              if let now = store.state.tryWrite({
                $0 += 1; return $0
              }) {
                mine = now
                break
              }
              await Task.yield()
            }
          }
          do { try await store.saved() } catch { Issue.record("saved() threw \(error)") }
          if (try? decoded(Int.self, at: file)) ?? 0 < mine { late.withLock { $0 += 1 } }
        }
      }
    }
  }
  return late.current
}
