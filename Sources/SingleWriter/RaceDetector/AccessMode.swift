/// What a section does with a resource, for ``RaceDetector``.
///
/// Sections that only read may overlap each other; a section that writes may overlap
/// no section of another thread.
///
/// ```swift
/// RaceDetector.withAccess(.read, "settings") { print(settings.theme) }
/// RaceDetector.withAccess(.write, "settings") { settings.theme = .dark }
/// ```
public enum AccessMode: Sendable, Hashable {
  /// Reads the resource; other threads may read it at the same time.
  case read
  /// Writes the resource; no other thread may read or write it at the same time.
  case write
}
