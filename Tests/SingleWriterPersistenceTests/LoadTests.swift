import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// Promise 1: the file is loaded if it exists, the default used if not, and a file that
/// cannot be decoded is reported and left as it was.
@Suite struct LoadTests {
  @Test func startsFromTheDefaultAndWritesNothingUntilTheFirstChange() async throws {
    let folder = makeFolder()
    let url = folder.appendingPathComponent("settings.json")
    let settings = try PersistedState(file: url, default: Settings(fontSize: 13))
    #expect(settings.state.read == Settings(fontSize: 13))
    try await settings.saved()
    // Unlike a file storage that writes its default (swift-sharing #166), no file at all.
    #expect(names(in: folder).isEmpty)

    settings.state.writeNext { $0.write.fontSize = 14 }
    try await settings.saved()
    #expect(try decoded(Settings.self, at: url) == Settings(fontSize: 14))
  }

  @Test func loadsTheSavedValueInANewInstance() async throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    do {
      let settings = try PersistedState(file: url, default: Settings())
      settings.state.withWriter { $0.theme = "dark" }
      try await settings.saved()
    }
    let again = try PersistedState(file: url, default: Settings())
    #expect(again.state.read == Settings(fontSize: 12, theme: "dark"))
  }

  @Test func aCorruptFileThrowsNamingItAndIsLeftAsItWas() throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    let corrupt = Data("{\"fontSize\": 14, \"theme\": ".utf8)
    try corrupt.write(to: url)
    #expect {
      _ = try PersistedState(file: url, default: Settings())
    } throws: { error in
      guard let error = error as? PersistenceError else { return false }
      return error.kind == .decode && error.file == url
        && error.description.contains(url.path) && error.description.contains("cannot decode")
        && error.underlying is DecodingError && error.localizedDescription.contains(url.path)
    }
    #expect(try Data(contentsOf: url) == corrupt)
  }

  @Test func anEmptyFileIsNotTakenForTheDefault() throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    try Data().write(to: url)
    #expect(throws: PersistenceError.self) {
      _ = try PersistedState(file: url, default: Settings())
    }
    #expect(try Data(contentsOf: url).isEmpty)
  }

  @Test func aPathThatIsAFolderCannotBeRead() throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    #expect {
      _ = try PersistedState(file: url, default: Settings())
    } throws: { error in
      (error as? PersistenceError)?.kind == .read
    }
  }

  @Test func aCustomDecoderReadsTheFile() throws {
    let url = makeFolder().appendingPathComponent("settings.json")
    try Data(#"{"font_size": 20, "theme": "sepia"}"#.utf8).write(to: url)
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    let settings = try PersistedState(file: url, default: Settings(), decoder: decoder)
    #expect(settings.state.read == Settings(fontSize: 20, theme: "sepia"))
  }
}
