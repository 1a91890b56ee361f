import Foundation
import SingleWriter
import SingleWriterPersistence

/// An app's settings, kept in a file. `lineSpacing` came in a later version of the app: a
/// synthesized `Decodable` would reject the files saved before it (it ignores defaults),
/// so the decoder reads each field with `decodeIfPresent` and keeps the default.
struct ReaderSettings: Codable, Sendable, Equatable {
  var fontSize = 12
  var theme = "light"
  var lineSpacing = 1.2

  init() {}

  init(from decoder: any Decoder) throws {
    let keys = try decoder.container(keyedBy: CodingKeys.self)
    let defaults = ReaderSettings()
    fontSize = try keys.decodeIfPresent(Int.self, forKey: .fontSize) ?? defaults.fontSize
    theme = try keys.decodeIfPresent(String.self, forKey: .theme) ?? defaults.theme
    lineSpacing =
      try keys.decodeIfPresent(Double.self, forKey: .lineSpacing) ?? defaults.lineSpacing
  }
}

/// The first launch of an app: no file yet, so the default; nothing is written until a
/// change.
func firstLaunch(_ url: URL) async throws {
  let settings = try PersistedState(file: url, default: ReaderSettings())
  settings.state.writeNext { $0.write.fontSize = 14 }
  settings.state.withWriter { $0.theme = "dark" }
  try await settings.saved()  // on disk: every write above
}

/// Settings that survive a restart: one run changes them and flushes, as an app does when
/// it goes to the background; the next run, here a second `PersistedState` on the same
/// file, as after a relaunch, finds them.
func persistenceWalkthrough() async {
  let folder = FileManager.default.temporaryDirectory
    .appendingPathComponent("SingleWriterExamples-\(ProcessInfo.processInfo.processIdentifier)")
  let url = folder.appendingPathComponent("settings.json")
  defer { try? FileManager.default.removeItem(at: folder) }
  do {
    try await firstLaunch(url)
    print(String(decoding: try Data(contentsOf: url), as: UTF8.self))

    // Relaunch: the saved value is back.
    let settings = try PersistedState(file: url, default: ReaderSettings())
    let restored = settings.state.read
    print("after a restart: font size \(restored.fontSize), theme \(restored.theme)")
    precondition(restored.fontSize == 14 && restored.theme == "dark")

    // A file left by an older version of the app, before `lineSpacing`.
    try Data(#"{"fontSize": 16, "theme": "sepia"}"#.utf8).write(to: url)
    let upgraded = try PersistedState(file: url, default: ReaderSettings())
    print("from an older file: line spacing \(upgraded.state.read.lineSpacing)")

    // A corrupt file is reported and kept, never replaced by the default.
    try Data("{ not json".utf8).write(to: url)
    do {
      _ = try PersistedState(file: url, default: ReaderSettings())
    } catch {
      print("corrupt: \(error is PersistenceError ? "PersistenceError" : "other"), file kept")
    }
  } catch {
    print("persistence walkthrough failed: \(error)")
  }
}
