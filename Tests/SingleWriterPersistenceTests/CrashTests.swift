import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promise 2, atomically, and 3, at the worst moment: a child process writes in every way
/// and flushes now and then, and is killed with SIGKILL at a random moment, 100 times.
/// After each kill the file must load, hold a value whose fields agree (one write set them
/// together), and hold at least what `saved()` had confirmed. Each child goes on from
/// the value the last one left.
@Suite struct CrashTests {
  static let kills = 100

  @Test(
    .disabled(if: underThreadSanitizer, "100 child processes are too slow under ThreadSanitizer")
  )
  func aProcessKilledAtAnyMomentLeavesAWholeFileHoldingWhatSavedConfirmed() async throws {
    let url = makeFolder().appendingPathComponent("linked.json")
    let path = url.path
    var lastLoaded = 0
    var deaths = 0
    for _ in 0..<Self.kills {
      // Up to 50 ms: past the child's start, through many saves of a 4 to 5 KB file.
      let delay = UInt32.random(in: 0...50_000)
      let result = await #expect(
        processExitsWith: .signal(SIGKILL), observing: [\.standardErrorContent]
      ) { [path = path as String, delay = delay as UInt32] in
        try await writeUntilKilled(path: path, after: delay)
      }
      guard let result else { return }
      deaths += 1
      let confirmed =
        String(decoding: result.standardErrorContent, as: UTF8.self)
        .split(separator: "\n")
        .compactMap { $0.hasPrefix("confirmed ") ? Int($0.dropFirst(10)) : nil }
        .max() ?? 0
      let loaded = try PersistedState(file: url, default: Linked()).state.read
      #expect(loaded.isConsistent, "a torn value: a \(loaded.a), b \(loaded.b)")
      #expect(loaded.a >= confirmed, "lost a confirmed write: \(loaded.a) < \(confirmed)")
      #expect(loaded.a >= lastLoaded, "an older value replaced a newer one")
      lastLoaded = loaded.a
    }
    #expect(deaths == Self.kills)
    #expect(lastLoaded > 0, "no child ever saved")
  }
}

/// The child: loads the file, then writes ever larger values in each way the container
/// offers, flushing every eighth and saying so on standard error, until a thread of its
/// own kills the process with SIGKILL after `delay` microseconds.
func writeUntilKilled(path: String, after delay: UInt32) async throws {
  let store = try PersistedState(file: URL(fileURLWithPath: path), default: Linked())
  precondition(store.state.read.isConsistent, "loaded a torn value")
  Thread.detachNewThread {
    usleep(delay)
    kill(getpid(), SIGKILL)
  }
  let box = store.state
  var n = box.read.a
  while true {
    n += 1
    let next = n
    switch n % 4 {
    case 0: box.writeNext { $0.write.set(next) }
    case 1: box.withWriter { $0.set(next) }
    case 2:
      // Three accesses through a held proxy: only its end is a whole value.
      let proxy = box.writer!
      proxy.write.a = next
      proxy.write.b = next
      proxy.write.padding = String(repeating: "x", count: 4_000 + next % 997)
      withExtendedLifetime(proxy) {}
    default: await box.write { $0.set(next) }
    }
    if n % 8 == 0 {
      try await store.saved()
      FileHandle.standardError.write(Data("confirmed \(next)\n".utf8))
    }
  }
}

/// Whether this process runs under ThreadSanitizer.
let underThreadSanitizer: Bool = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil
