import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// A file saved by an older version of the app, before `lineSpacing` was added. A
/// synthesized `Decodable` init ignores a property's default and throws `keyNotFound`
/// for it; a field added later decodes with `decodeIfPresent`, keeping the default.
struct SettingsV2: Codable, Sendable, Equatable {
  var fontSize = 12
  var theme = "light"
  var lineSpacing = 1.2  // new in version 2

  init() {}

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    let defaults = SettingsV2()
    fontSize = try container.decodeIfPresent(Int.self, forKey: .fontSize) ?? defaults.fontSize
    theme = try container.decodeIfPresent(String.self, forKey: .theme) ?? defaults.theme
    lineSpacing =
      try container.decodeIfPresent(Double.self, forKey: .lineSpacing) ?? defaults.lineSpacing
  }
}

/// `SettingsV2` without the custom init: what a plain `Codable` struct does.
struct SettingsV2Synthesized: Codable, Sendable, Equatable {
  var fontSize = 12
  var theme = "light"
  var lineSpacing = 1.2
}

@Suite struct OlderVersionTests {
  @Test func aFieldAddedWithADefaultLoadsFromAnOlderFile() async throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    do {
      let old = try PersistedState(file: url, default: Settings())
      old.state.withWriter { $0.fontSize = 18 }
      try await old.saved()
    }
    let new = try PersistedState(file: url, default: SettingsV2())
    #expect(new.state.read.fontSize == 18)
    #expect(new.state.read.lineSpacing == 1.2)
    // The next save writes the new field too.
    new.state.withWriter { $0.theme = "dark" }
    try await new.saved()
    #expect(text(of: url)?.contains("lineSpacing") == true)
  }

  @Test func aSynthesizedDecoderRejectsTheOlderFileWhichIsKept() async throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    do {
      let old = try PersistedState(file: url, default: Settings())
      old.state.withWriter { $0.fontSize = 18 }
      try await old.saved()
    }
    let before = try Data(contentsOf: url)
    #expect(throws: PersistenceError.self) {
      _ = try PersistedState(file: url, default: SettingsV2Synthesized())
    }
    #expect(try Data(contentsOf: url) == before)
  }
}
