import Foundation
import SingleWriterAtomics

/// The file a ``PersistedState`` keeps its value in: read once, replaced whole by each
/// save through a temporary file beside it (see `sw_replace_file`).
struct StateFile: Sendable {
  let url: URL
  /// In the same folder, so the rename stays on one file system; one per `StateFile` (the
  /// process id and a random part), so that two stores saving the same file by mistake,
  /// in two processes or in one, never write one temporary file: a save stays whole.
  let temporary: URL
  let folder: URL

  init(_ url: URL) {
    self.url = url
    folder = url.deletingLastPathComponent()
    temporary = folder.appendingPathComponent(
      ".\(Self.shortened(url.lastPathComponent)).\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8)).tmp"
    )
  }

  /// `name`, or for a name too long to take the temporary file's dots, process id and
  /// suffix within the system's 255 bytes, its start and a hash of the whole: two long
  /// names that start alike still get temporary files of their own.
  static func shortened(_ name: String) -> String {
    guard name.utf8.count > 200 else { return name }
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
    for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    var start = ""
    var bytes = 0
    for scalar in name.unicodeScalars {
      bytes += String(scalar).utf8.count
      if bytes > 160 { break }
      start.unicodeScalars.append(scalar)
    }
    return "\(start)-\(String(hash, radix: 16))"
  }

  /// The file's bytes, or `nil` if there is no file.
  func read() throws(PersistenceError) -> Data? {
    do {
      return try Data(contentsOf: url)
    } catch {
      guard FileManager.default.fileExists(atPath: url.path) else { return nil }
      throw PersistenceError(kind: .read, file: url, underlying: error)
    }
  }

  /// Replaces the file with `data`, atomically and durably; creates a missing folder, as
  /// an app's Application Support folder may be on its first save.
  func replace(with data: Data) throws(PersistenceError) {
    var failure = attemptReplace(data)
    if let first = failure, first.step == SW_FILE_CREATE, first.code == Int32(SW_FILE_NOT_FOUND),
      (try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true))
        != nil
    {
      failure = attemptReplace(data)
    }
    guard let failure else { return }
    throw PersistenceError(
      kind: .save, file: url, underlying: describe(step: failure.step, code: failure.code))
  }

  private func attemptReplace(_ data: Data) -> (step: Int, code: Int32)? {
    var code: Int32 = 0
    let step = url.withUnsafeFileSystemRepresentation { path in
      temporary.withUnsafeFileSystemRepresentation { temporaryPath in
        folder.withUnsafeFileSystemRepresentation { folderPath in
          guard let path, let temporaryPath, let folderPath else {
            code = Int32(SW_FILE_BAD_PATH)
            return SW_FILE_CREATE
          }
          return data.withUnsafeBytes { bytes in
            Int(
              sw_replace_file(
                path, temporaryPath, folderPath, bytes.baseAddress, bytes.count, &code))
          }
        }
      }
    }
    return step == SW_FILE_DONE ? nil : (step, code)
  }

  private func describe(step: Int, code: Int32) -> PersistenceError.SaveFailure {
    let doing: String
    switch step {
    case SW_FILE_CREATE: doing = "creating the temporary file \(temporary.path)"
    case SW_FILE_WRITE: doing = "writing the temporary file \(temporary.path)"
    case SW_FILE_SYNC: doing = "flushing the temporary file \(temporary.path) to disk"
    case SW_FILE_RENAME: doing = "renaming \(temporary.path) over the file"
    default: doing = "flushing the folder \(folder.path) after the rename"
    }
    var buffer = [CChar](repeating: 0, count: 256)
    sw_error_message(code, &buffer, buffer.count)
    return PersistenceError.SaveFailure(
      step: doing, code: code,
      message: String(
        decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
  }
}
