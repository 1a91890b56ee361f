// A Hummingbird 2 server whose handlers read shared state on every request while a
// background task rebuilds that state in long transactions (a cache rebuilt entry by
// entry) and another refreshes a token across an `await`. The state lives in one of four
// containers, chosen on the command line, so that the same server can be loaded with wrk
// over each; Benchmarks/server-bench.sh does that.
//
//   swift run -c release --package-path Benchmarks Server --store singlewriter --port 8080
//   curl http://127.0.0.1:8080/item/7
//
// --store singlewriter | mutex | nio | actor; --entries 1000; --entry-work-ns 5000 (work
// to compute one entry); --rebuild-every-ms 20 (pause between rebuilds);
// --refresh-every-ms 50 and --fetch-ms 2 (the token). Listens on 127.0.0.1 only.

import BenchmarkSupport
import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import SingleWriter
import Synchronization

struct Options {
  var store = "singlewriter"
  var port = 8080
  var entries = 1_000
  var entryWorkNs = 5_000.0
  var rebuildEveryMs = 20
  var refreshEveryMs = 50
  var fetchMs = 2
}

func parseOptions() -> Options {
  var options = Options()
  var arguments = ArgumentReader(
    tool: "Server",
    usage: """
      usage: Server [--store singlewriter|mutex|nio|actor] [--port 8080] [--entries 1000]
                    [--entry-work-ns 5000] [--rebuild-every-ms 20] [--refresh-every-ms 50]
                    [--fetch-ms 2]
      """)
  while let argument = arguments.next() {
    let value = { arguments.value(of: argument) }
    switch argument {
    case "--store": options.store = value()
    case "--port": options.port = Int(value()) ?? -1
    case "--entries": options.entries = Int(value()) ?? 0
    case "--entry-work-ns": options.entryWorkNs = Double(value()) ?? -1
    case "--rebuild-every-ms": options.rebuildEveryMs = Int(value()) ?? -1
    case "--refresh-every-ms": options.refreshEveryMs = Int(value()) ?? -1
    case "--fetch-ms": options.fetchMs = Int(value()) ?? -1
    default: arguments.fail("unknown argument \(argument)")
    }
  }
  guard ["singlewriter", "mutex", "nio", "actor"].contains(options.store),
    (1...65535).contains(options.port), options.entries >= 1, options.entryWorkNs >= 0,
    options.rebuildEveryMs >= 0, options.refreshEveryMs >= 1, options.fetchMs >= 0
  else { arguments.fail("bad value") }
  return options
}

/// What the handlers read: a cache of computed entries, its generation, and a token.
struct Catalog: Sendable {
  var entries: [Int]
  var generation = 0
  var token = 0
}

/// The work of computing one entry: dependent arithmetic, `iterations` steps.
@inline(never)
func compute(_ seed: Int, iterations: Int) -> Int {
  var x = UInt64(truncatingIfNeeded: seed) | 1
  for _ in 0..<iterations {
    x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    x ^= x >> 29
  }
  return Int(truncatingIfNeeded: x & 0xFFFF)
}

/// How many `compute` steps take about `nanoseconds` here.
func calibrate(nanoseconds: Double) -> Int {
  guard nanoseconds > 0 else { return 0 }
  let probe = 100_000
  var best = Double.infinity
  var sink = 0
  for seed in 0..<20 {
    let start = DispatchTime.now().uptimeNanoseconds
    sink &+= compute(seed, iterations: probe)
    best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start))
  }
  return sink == 42 ? 1 : max(1, Int(nanoseconds / (best / Double(probe))))
}

/// How long each request waited for the shared state, in `LatencyHistogram`'s buckets,
/// counted with one atomic add per request so that recording does not itself serialize the
/// event loops.
final class LookupTimes: Sendable {
  final class Bucket: Sendable { let count = Atomic(0) }
  let buckets = (0..<LatencyHistogram.bucketCount).map { _ in Bucket() }
  let maximum = Atomic(0)

  func record(_ ns: Int) {
    buckets[LatencyHistogram.bucket(UInt64(max(ns, 0)))].count.add(1, ordering: .relaxed)
    _ = maximum.max(ns, ordering: .relaxed)
  }

  /// "lookups N p99 X p99.9 Y max Z slow S", in ns; S counts lookups over 100 µs. Only the
  /// requests an event loop is serving when it blocks wait for the state, the rest queue
  /// behind them: a few in a thousand, so the count says more than a percentile.
  var summary: String {
    let times = LatencyHistogram(
      counts: buckets.map { $0.count.load(ordering: .relaxed) },
      max: UInt64(maximum.load(ordering: .relaxed)))
    return "lookups \(times.total) p99 \(times.quantile(0.99)) p99.9 \(times.quantile(0.999)) "
      + "max \(times.max) slow \(times.count(above: 100_000))\n"
  }
}

/// The simulated call to the token server.
func fetchToken(after token: Int, milliseconds: Int) async -> Int {
  try? await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
  return token + 1
}

/// The state behind one of the four containers.
protocol Store: Sendable {
  /// What a request reads: one entry, the generation and the token.
  func lookup(_ id: Int) async -> (entry: Int, generation: Int, token: Int)
  /// Recomputes every entry, one by one, as one transaction: no other write gets in.
  func rebuild(iterations: Int) async
  /// Fetches a new token and installs it.
  func refreshToken(fetchMs: Int) async
}

/// Reads never wait; the rebuild holds the writer for its whole length, and the refresh
/// holds it across the fetch, while requests keep reading.
final class SingleWriterStore: Store {
  let state: ThreadSafeSingleWriter<Catalog>
  init(entries: Int) {
    state = ThreadSafeSingleWriter(value: Catalog(entries: Array(repeating: 0, count: entries)))
  }

  func lookup(_ id: Int) async -> (entry: Int, generation: Int, token: Int) {
    let catalog = state.read
    return (catalog.entries[id % catalog.entries.count], catalog.generation, catalog.token)
  }

  func rebuild(iterations: Int) async {
    guard let writer = try? await state.checkout() else { return }
    let generation = writer.write.generation + 1
    for index in 0..<writer.write.entries.count {
      let value = compute(generation &* 31 &+ index, iterations: iterations)
      writer.write.entries[index] = value
    }
    writer.write.generation = generation
  }

  func refreshToken(fetchMs: Int) async {
    guard let writer = try? await state.checkout() else { return }
    writer.write.token = await fetchToken(after: writer.write.token, milliseconds: fetchMs)
  }
}

/// A lock held for the whole rebuild, so that no other write gets in; it cannot be held
/// across the fetch, so the refresh fetches first and then takes it.
final class MutexStore: Store {
  let state: Mutex<Catalog>
  init(entries: Int) { state = Mutex(Catalog(entries: Array(repeating: 0, count: entries))) }

  func lookup(_ id: Int) async -> (entry: Int, generation: Int, token: Int) {
    state.withLock { ($0.entries[id % $0.entries.count], $0.generation, $0.token) }
  }

  func rebuild(iterations: Int) async {
    state.withLock { catalog in
      let generation = catalog.generation + 1
      for index in 0..<catalog.entries.count {
        catalog.entries[index] = compute(generation &* 31 &+ index, iterations: iterations)
      }
      catalog.generation = generation
    }
  }

  func refreshToken(fetchMs: Int) async {
    let token = await fetchToken(after: state.withLock { $0.token }, milliseconds: fetchMs)
    state.withLock { $0.token = token }
  }
}

/// The same with swift-nio's lock.
final class NIOStore: Store {
  let state: NIOLockedValueBox<Catalog>
  init(entries: Int) {
    state = NIOLockedValueBox(Catalog(entries: Array(repeating: 0, count: entries)))
  }

  func lookup(_ id: Int) async -> (entry: Int, generation: Int, token: Int) {
    state.withLockedValue { ($0.entries[id % $0.entries.count], $0.generation, $0.token) }
  }

  func rebuild(iterations: Int) async {
    state.withLockedValue { catalog in
      let generation = catalog.generation + 1
      for index in 0..<catalog.entries.count {
        catalog.entries[index] = compute(generation &* 31 &+ index, iterations: iterations)
      }
      catalog.generation = generation
    }
  }

  func refreshToken(fetchMs: Int) async {
    let token = await fetchToken(
      after: state.withLockedValue { $0.token }, milliseconds: fetchMs)
    state.withLockedValue { $0.token = token }
  }
}

/// Every request hops onto the actor; the rebuild is one method with no `await`, so it
/// runs whole. The refresh guards against the actor's reentrancy with a stored task.
actor ActorStore: Store {
  var catalog: Catalog
  var inFlight: Task<Int, Never>?
  init(entries: Int) { catalog = Catalog(entries: Array(repeating: 0, count: entries)) }

  func lookup(_ id: Int) async -> (entry: Int, generation: Int, token: Int) {
    (catalog.entries[id % catalog.entries.count], catalog.generation, catalog.token)
  }

  func rebuild(iterations: Int) async {
    let generation = catalog.generation + 1
    for index in 0..<catalog.entries.count {
      catalog.entries[index] = compute(generation &* 31 &+ index, iterations: iterations)
    }
    catalog.generation = generation
  }

  func refreshToken(fetchMs: Int) async {
    if let fetch = inFlight {
      _ = await fetch.value
      return
    }
    let previous = catalog.token
    let fetch = Task { await fetchToken(after: previous, milliseconds: fetchMs) }
    inFlight = fetch
    let token = await fetch.value
    if token > catalog.token { catalog.token = token }
    inFlight = nil
  }
}

let options = parseOptions()
let iterations = calibrate(nanoseconds: options.entryWorkNs)
let store: any Store =
  switch options.store {
  case "mutex": MutexStore(entries: options.entries)
  case "nio": NIOStore(entries: options.entries)
  case "actor": ActorStore(entries: options.entries)
  default: SingleWriterStore(entries: options.entries)
  }

// The background writers: a rebuild, then a pause; a refresh, then a pause.
let rebuilds = Task.detached {
  while !Task.isCancelled {
    await store.rebuild(iterations: iterations)
    try? await Task.sleep(nanoseconds: UInt64(options.rebuildEveryMs) * 1_000_000)
  }
}
let refreshes = Task.detached {
  while !Task.isCancelled {
    await store.refreshToken(fetchMs: options.fetchMs)
    try? await Task.sleep(nanoseconds: UInt64(options.refreshEveryMs) * 1_000_000)
  }
}

let lookupTimes = LookupTimes()
let router = Router()
router.get("item/:id") { _, context -> String in
  let id = context.parameters.get("id", as: Int.self) ?? 0
  // The time the request spends getting the state, measured in the server: wrk's
  // latencies also hold the network, the event loops' queues and the scheduler.
  let start = DispatchTime.now().uptimeNanoseconds
  let found = await store.lookup(max(id, 0))
  lookupTimes.record(Int(DispatchTime.now().uptimeNanoseconds - start))
  return "entry \(found.entry) generation \(found.generation) token \(found.token)\n"
}
router.get("health") { _, _ -> String in "ok\n" }
router.get("stats") { _, _ -> String in lookupTimes.summary }

let app = Application(
  router: router,
  configuration: .init(address: .hostname("127.0.0.1", port: options.port))
)
print(
  "Server: --store \(options.store) on 127.0.0.1:\(options.port), \(options.entries) entries, "
    + "\(iterations) steps per entry")
try await app.runService()
rebuilds.cancel()
refreshes.cancel()
