import Foundation
import SingleWriterAtomics

/// The file a ``PersistedState`` keeps its value in: read once, replaced whole by each
/// save through a temporary file beside it (see `sw_replace_file`).
struct StateFile: Sendable {
  let url: URL
  /// The temporary file's name, in the folder of the file a save replaces, so the rename
  /// stays on one file system; one per `StateFile` (the process id and a random part),
  /// so that two stores saving the same file by mistake, in two processes or in one,
  /// never write one temporary file: a save stays whole.
  let temporaryName: String
  /// The parents of the folders a save made whose flush failed: no save succeeds until
  /// they are flushed, else a later save would find the folder there and be confirmed
  /// with its entry still unflushed.
  let unflushedParents = UnflushedParents()

  init(_ url: URL) {
    self.url = url
    temporaryName =
      ".\(Self.shortened(url.lastPathComponent)).\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8)).tmp"
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

  /// The file's bytes, or `nil` if there is no file. Only a file that is not there is
  /// `nil`: one the system cannot look up (a loop of links, a folder the app may not
  /// search) or that is not a regular file (a folder, a named pipe, which a read would
  /// wait at) throws, so the store never starts from the default over a file it could
  /// not read, to replace it at the first save that can.
  func read() throws(PersistenceError) -> Data? {
    var code: Int32 = 0
    let kind = url.withUnsafeFileSystemRepresentation { path -> Int32 in
      guard let path else {
        code = Int32(SW_FILE_BAD_PATH)
        return Int32(SW_FILE_UNKNOWN)
      }
      return sw_file_kind(path, &code)
    }
    switch Int(kind) {
    case SW_FILE_MISSING: return nil
    case SW_FILE_OTHER:
      throw PersistenceError(
        kind: .read, file: url,
        underlying: Self.failure("reading \(url.path), which is not a regular file", code))
    case SW_FILE_UNKNOWN:
      throw PersistenceError(
        kind: .read, file: url, underlying: Self.failure("looking up \(url.path)", code))
    default:
      do {
        return try Data(contentsOf: url)
      } catch {
        throw PersistenceError(kind: .read, file: url, underlying: error)
      }
    }
  }

  /// Replaces the file with `data`, atomically and durably; creates a missing folder, as
  /// an app's Application Support folder may be on its first save.
  ///
  /// Where `url` is a symbolic link, the file it leads to is replaced and the link kept,
  /// as a save through the link by an editor would: a settings file linked from a
  /// dotfiles repository stays linked. Looked up at each save, so a link pointed
  /// elsewhere is followed.
  func replace(with data: Data) throws(PersistenceError) {
    let target = try linkTarget()
    let folder = target.deletingLastPathComponent()
    try flushNewFolders()
    var failure = attemptReplace(data, at: target)
    if let first = failure, first.step == SW_FILE_CREATE, first.code == Int32(SW_FILE_NOT_FOUND) {
      // A `..` after a missing folder climbs out of a folder the system cannot find: once
      // made, the path would name another file than the one the load found missing, one
      // that may be there, and the save would replace it unread.
      if let missing = Self.missingFolderClimbedOutOf(folder) {
        throw PersistenceError(
          kind: .save, file: url,
          underlying: Self.failure(
            "making the folder \(folder.path), whose `..` climbs out of the missing folder \(missing.path)",
            Int32(SW_FILE_NOT_FOUND)))
      }
      // The new folders' entries are flushed in their parents, as the rename's is in its
      // folder: a save that `saved()` confirmed survives a power loss with its folder.
      let parents = Self.parentsToFlush(creating: folder)
      if (try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true))
        != nil
      {
        unflushedParents.add(parents)
        try flushNewFolders()
        failure = attemptReplace(data, at: target)
      }
    }
    guard let failure else { return }
    throw PersistenceError(
      kind: .save, file: url,
      underlying: describe(step: failure.step, code: failure.code, target: target))
  }

  /// The file a save replaces: `url`, or the file its chain of symbolic links ends at
  /// (relative links from their own folder), which may not exist yet. Throws for a chain
  /// longer than any system follows (40 links on Linux, 32 on Apple platforms): a loop.
  func linkTarget() throws(PersistenceError) -> URL {
    var target = url
    for _ in 0...40 {
      guard
        let destination = try? FileManager.default.destinationOfSymbolicLink(
          atPath: target.path)
      else { return target }
      // A destination ending in `/` names a folder, which the system never opens or makes
      // as a file (the load found it missing, or not a file), but a URL drops the slash:
      // the save would replace the file of that name, or make one the next load misses.
      guard !destination.hasSuffix("/") else {
        throw PersistenceError(
          kind: .save, file: url,
          underlying: Self.failure(
            "following the symbolic link \(target.path) to \(destination), which names a folder",
            Int32(SW_FILE_NOT_A_FOLDER)))
      }
      // A relative link appended to its folder as named, `..` and all, never resolved
      // by hand: the system climbs out of the folder the link is really in, which the
      // path names differently when a folder on it is a link.
      target =
        NSString(string: destination).isAbsolutePath
        ? URL(fileURLWithPath: destination)
        : target.deletingLastPathComponent().appendingPathComponent(destination)
    }
    throw PersistenceError(
      kind: .save, file: url,
      underlying: Self.failure(
        "following the symbolic links from \(url.path)", Int32(SW_FILE_LINK_LOOP)))
  }

  /// The folders to flush once the missing ones up to `folder` are created: the parent of
  /// each, where its entry is. Computed before they are made, and named as `folder`
  /// names them, never standardized by hand: a `..` after a linked folder climbs out of
  /// the folder it links to, as the system resolves it.
  static func parentsToFlush(creating folder: URL) -> [URL] {
    let components = folder.pathComponents
    guard let first = components.first else { return [] }
    var prefixes = [URL(fileURLWithPath: first, isDirectory: true)]
    for component in components.dropFirst() {
      prefixes.append(prefixes[prefixes.count - 1].appendingPathComponent(component))
    }
    // The longest start of the path that is there: each folder after it is made.
    guard
      let there = prefixes.lastIndex(where: { FileManager.default.fileExists(atPath: $0.path) }
      )
    else { return [] }
    var parents: [URL] = []
    for index in (there + 1)..<prefixes.count
    where components[index] != "." && components[index] != ".." {
      // A `.` or `..` names a folder that is there by then: no new entry.
      parents.append(prefixes[index - 1])
    }
    return parents.reversed()
  }

  /// Flushes the parents of the folders saves made, oldest first; throws for the first
  /// that fails. One that is gone (its folder removed since) has no entry left to flush.
  private func flushNewFolders() throws(PersistenceError) {
    while let parent = unflushedParents.first {
      if let code = Self.flush(folder: parent), code != Int32(SW_FILE_NOT_FOUND) {
        throw PersistenceError(
          kind: .save, file: url,
          underlying: Self.failure(
            "flushing the folder \(parent.path) after creating a folder in it", code))
      }
      unflushedParents.removeFirst()
    }
  }

  /// The first missing folder on `folder`'s path, if a `..` follows it.
  static func missingFolderClimbedOutOf(_ folder: URL) -> URL? {
    let components = folder.pathComponents
    guard let first = components.first else { return nil }
    var prefix = URL(fileURLWithPath: first, isDirectory: true)
    var missing: URL?
    for component in components.dropFirst() {
      if component == "..", let missing { return missing }
      prefix = prefix.appendingPathComponent(component)
      if missing == nil, !FileManager.default.fileExists(atPath: prefix.path) { missing = prefix }
    }
    return nil
  }

  /// Flushes `folder`; the `errno` value if that failed.
  private static func flush(folder: URL) -> Int32? {
    var code: Int32 = 0
    let result = folder.withUnsafeFileSystemRepresentation { path -> Int32 in
      guard let path else {
        code = Int32(SW_FILE_BAD_PATH)
        return -1
      }
      return sw_flush_folder(path, &code)
    }
    return result == 0 ? nil : code
  }

  private func attemptReplace(_ data: Data, at target: URL) -> (step: Int, code: Int32)? {
    let folder = target.deletingLastPathComponent()
    let temporary = folder.appendingPathComponent(temporaryName)
    var code: Int32 = 0
    let step = target.withUnsafeFileSystemRepresentation { path in
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

  /// What failed, for `step` of a save that replaced `target` (for the folder step,
  /// the folder).
  private func describe(step: Int, code: Int32, target: URL) -> PersistenceError.SaveFailure {
    let folder = target.deletingLastPathComponent()
    let temporary = folder.appendingPathComponent(temporaryName).path
    let doing: String
    switch step {
    case SW_FILE_CREATE: doing = "creating the temporary file \(temporary)"
    case SW_FILE_WRITE: doing = "writing the temporary file \(temporary)"
    case SW_FILE_SYNC: doing = "flushing the temporary file \(temporary) to disk"
    case SW_FILE_RENAME: doing = "renaming \(temporary) over \(target.path)"
    default: doing = "flushing the folder \(folder.path) after the rename"
    }
    return Self.failure(doing, code)
  }

  private static func failure(_ doing: String, _ code: Int32) -> PersistenceError.SaveFailure {
    var buffer = [CChar](repeating: 0, count: 256)
    sw_error_message(code, &buffer, buffer.count)
    return PersistenceError.SaveFailure(
      step: doing, code: code,
      message: String(
        decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
  }
}

/// The parents still to flush after a save made folders in them, in the order to flush.
final class UnflushedParents: @unchecked Sendable {
  // Sendable: `parents` is only touched under `lock` (saves run one at a time, on the
  // saver's queue, but the type does not rely on it).
  private let lock = NSLock()
  private var parents: [URL] = []

  func add(_ more: [URL]) { lock.withLock { parents += more } }
  var first: URL? { lock.withLock { parents.first } }
  func removeFirst() { _ = lock.withLock { parents.removeFirst() } }
}
