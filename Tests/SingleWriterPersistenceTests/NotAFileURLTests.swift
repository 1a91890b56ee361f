import Foundation
import SingleWriter
import SingleWriterPersistence
import Testing

/// "Misuse gets a clear message, never a hang or silent loss", for `init(file:default:)`
/// given a URL that is not a file's. The load tried to fetch it with `Data(contentsOf:)`,
/// over the network; when that failed, the store started from the default, and every
/// save then went to the URL's path on the local disk: `https://host/n.json` replaced
/// `/n.json`. Now it throws a read error naming the URL, and nothing is fetched or
/// written.
@Suite struct NotAFileURLTests {
  @Test func aURLThatIsNotAFilesThrowsNamingIt() throws {
    let name = "SingleWriterPersistenceTests-\(UUID().uuidString).json"
    let url = URL(string: "https://example.invalid/\(name)")!
    #expect {
      _ = try PersistedState(file: url, default: 0)
    } throws: { error in
      guard let error = error as? PersistenceError else { return false }
      return error.kind == .read && error.file == url
        && error.description.contains(url.absoluteString)
    }
    #expect(!FileManager.default.fileExists(atPath: "/\(name)"))
  }
}
