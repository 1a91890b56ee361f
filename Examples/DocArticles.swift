import Dispatch
import SingleWriter
import SingleWriterCompanions
import Synchronization

// The code of the DocC articles in Sources/SingleWriter/SingleWriter.docc, compiled here so
// that the articles cannot drift from the API. Each article's code block appears below as
// it is in the article; a block of statements is wrapped in a function. Change both
// together.

// MARK: Choosing a container

struct AppSettings {
  var theme = "light"
  var fontSize = 12
}

struct RequestStats: Sendable {
  var hits = 0
  var misses = 0
}

// A SingleWriter is not Sendable, so Swift 6 requires a global one to be isolated to an
// actor: here the main actor, like the UI that reads it.
@MainActor let appSettings = SingleWriter(value: AppSettings())

// A ThreadSafeSingleWriter of a Sendable value is Sendable: a plain `let` will do.
let requestStats = ThreadSafeSingleWriter(value: RequestStats())

@MainActor func useDarkMode() {
  _ = appSettings.tryWrite { $0.theme = "dark" }  // no lock: the main actor is the only writer
}

func recordHit() {
  requestStats.writeNext { $0.write.hits += 1 }  // any thread; queued if busy, never lost
}

@available(macOS 15, iOS 18, tvOS 18, watchOS 11, *)
func countHitsWithMutex() -> Int {
  let hits = Mutex(0)
  DispatchQueue.concurrentPerform(iterations: 100) { _ in
    hits.withLock { $0 += 1 }
  }
  return hits.withLock { $0 }
}

actor HitCounter {
  private(set) var hits = 0
  func record() { hits += 1 }
}

// MARK: Writes that wait their turn

let inventory = ThreadSafeSingleWriter(value: [String: Int]())

func restock(_ item: String, by count: Int) {
  inventory.writeNext { $0.write[item, default: 0] += count }
}

func takeOne(_ item: String) -> Bool {
  inventory.withWriter { stock in
    guard let left = stock[item], left > 0 else { return false }
    stock[item] = left - 1
    return true
  }
}

func sellOne(_ item: String) async -> Bool {
  await inventory.write { stock in
    guard let left = stock[item], left > 0 else { return false }
    stock[item] = left - 1
    return true
  }
}

func fetchCounts() async -> [String: Int] { ["pear": 5] }  // stands in for a network call

func recount() async throws {
  let writer = try await inventory.checkout()  // hold the writer across the await
  writer.write = await fetchCounts()  // everyone else queues meanwhile
}  // `writer` is released here, and the queued writes run

func takeOneIfFree(_ item: String) -> Bool? {
  inventory.tryWrite { stock in  // nil at once if the writer is busy
    guard let left = stock[item], left > 0 else { return false }
    stock[item] = left - 1
    return true
  }
}

func queuedInOrder() -> [Int] {
  let log = ThreadSafeSingleWriter(value: [Int]())
  withExtendedLifetime(log.writer) {  // hold the writer, so the writes below queue
    for i in 1...3 { log.writeNext { $0.write.append(i) } }
  }  // released: this thread runs the three queued writes, in order
  return log.read  // [1, 2, 3]
}

func flush(_ events: ThreadSafeSingleWriter<[String]>, _ batch: [String]) async {
  for event in batch { events.writeNext { $0.write.append(event) } }
  await events.drained()  // every append above has run
}

let log = ThreadSafeSingleWriter(value: [String](), maxQueuedWrites: 1_024)

let accounts = ReentrantMutex()
let ledger = ThreadSafeSingleWriter(value: [String]())

func transfer() {
  accounts.with {
    ledger.withWriter { $0.append("transfer") }  // accounts, then ledger
  }
}

func audit() {
  ledger.withWriter { entries in
    accounts.with { entries.append("audit") }  // ledger, then accounts: reported
  }
}

/// Runs the two orders, one after the other, so nothing deadlocks; a debug build reports
/// the second. Collected here instead of stopping, which is what the default handler does.
func inconsistentLockOrder() -> String {
  let previous = RaceDetector.onRace
  let kinds = ThreadSafeSingleWriter(value: [RaceReport.Kind]())
  RaceDetector.onRace = { report in kinds.withWriter { $0.append(report.kind) } }
  defer { RaceDetector.onRace = previous }
  transfer()
  audit()
  return "\(ledger.read), reported: \(kinds.read.map { "\($0)" })"
  // debug: ["transfer", "audit"], reported: ["lockOrderInversion"]; release: reported: []
}

// MARK: Moving from the article's gist

struct Profile {
  var name: String
  var visits: [String]
}

@MainActor enum Model {
  static let profile = SingleWriter(value: Profile(name: "Default", visits: []))
}

@MainActor func renameAndVisit() {
  let profile = Model.profile
  guard let writer = profile.writer else { return }  // nil while another is alive
  writer.write.name = "Joe"  // in place: `visits` is not copied
  withExtendedLifetime(writer) {  // the checkout is out at least until here
    profile.writer?.write.name = "Sally"  // nil: no effect
    profile.writeNext { $0.write.visits.append("home") }  // queued
  }  // released after its last use: the queued write runs then
  print(profile.read.name, profile.read.visits)  // Joe ["home"]
}

@MainActor func lentProxy() {
  weak var kept: WriterProxy<Profile>?
  Model.profile.writeNext { proxy in
    proxy.write.visits.append("settings")
    kept = proxy  // a weak reference does not keep the checkout
  }
  // The checkout has ended, and `kept` with it: it cannot write behind anyone's back.
  print(kept == nil)  // true
}

struct Visits: Sendable {
  var pages: [String] = []
}

let visits = ThreadSafeSingleWriter(value: Visits())

func recordVisit(_ page: String) {
  visits.writeNext { $0.write.pages.append(page) }  // from any thread
}

// MARK: Walkthrough

/// Runs the articles' code and prints what it did.
@MainActor func docArticlesWalkthrough() async {
  useDarkMode()
  DispatchQueue.concurrentPerform(iterations: 100) { _ in recordHit() }
  let mutexHits: Int
  if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
    mutexHits = countHitsWithMutex()
  } else {
    mutexHits = 100
  }
  let counter = HitCounter()
  for _ in 0..<100 { await counter.record() }
  print(
    "choosing: theme \(appSettings.read.theme), hits \(requestStats.read.hits) / \(mutexHits)"
      + " / \(await counter.hits)")  // dark, 100 / 100 / 100

  restock("apple", by: 2)
  let took = takeOne("apple")
  let sold = await sellOne("apple")
  let more = takeOneIfFree("apple") ?? false
  try? await recount()
  print("waiting: \(took) \(sold) \(more) \(inventory.read) \(queuedInOrder())")
  // true true false ["pear": 5] [1, 2, 3]
  await flush(log, ["opened", "saved"])
  print("backlog: \(log.read), \(log.queuedWrites) queued")  // ["opened", "saved"], 0 queued
  print("lock order: \(inconsistentLockOrder())")

  renameAndVisit()
  lentProxy()
  recordVisit("home")
  print("moving: \(Model.profile.read.visits), \(visits)")
  // ["home", "settings"], ThreadSafeSingleWriter<Visits>(Visits(pages: ["home"]))
}
