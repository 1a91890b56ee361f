import Foundation

/// Why a ``PersistedState`` could not load its file, or could not save a change.
///
/// ```swift
/// do {
///   settings = try PersistedState(file: url, default: Settings())
/// } catch let error as PersistenceError where error.kind == .decode {
///   print(error)  // names the file and what the decoder found; the file is untouched
/// }
/// ```
///
/// Its description names the file and the failure: the decoder's error, or the step of
/// the save that failed and the system's message.
public struct PersistenceError: LocalizedError, CustomStringConvertible {
  /// What could not be done.
  public enum Kind: Sendable, Equatable {
    /// The file is there but could not be read: not a regular file (a folder, a named
    /// pipe), no permission, a loop of symbolic links, or the URL is not a file's. Only
    /// a file that is not there starts from the default.
    case read
    /// The file was read but is not a value of the type: corrupt, or from an
    /// incompatible version. It is left as it was.
    case decode
    /// The encoder refused the value. Nothing was written.
    case encode
    /// The file system refused the save: a missing or read-only folder, a full disk. The
    /// file holds the last value saved before, whole; but where only the folder's flush
    /// after the rename failed (a folder the app may write but not read), it holds the
    /// new value, which a power loss may undo.
    case save
  }

  /// What could not be done.
  public let kind: Kind
  /// The file that was being loaded or saved.
  public let file: URL
  /// The decoder's or encoder's error, Foundation's read error, or a ``SaveFailure``.
  public let underlying: any Error

  public var description: String {
    let verb: String
    switch kind {
    case .read: verb = "cannot read"
    case .decode: verb = "cannot decode"
    case .encode: verb = "cannot encode the value for"
    case .save: verb = "cannot save"
    }
    let place = file.isFileURL ? file.path : file.absoluteString
    return "SingleWriterPersistence: \(verb) \(place): \(underlying)"
  }

  /// The description, so that `localizedDescription` names the file and the failure too.
  public var errorDescription: String? { description }

  /// A file system call that failed, in a save (or in a load's look-up of the file): the
  /// step, and the system's error.
  public struct SaveFailure: Error, CustomStringConvertible {
    /// What the save was doing, such as "creating the temporary file /app/.settings.json.412-1F2E3D4C.tmp".
    public let step: String
    /// The system's error number (`errno`; Windows errors are mapped to the nearest one).
    public let code: Int32
    /// The system's message for `code`.
    public let message: String

    public var description: String { "\(step): \(message) (error \(code))" }
  }
}
