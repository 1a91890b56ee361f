// Versions of a container's publications, for a module of this package that must tell
// whether a value it was delivered includes the writes made before some moment:
// SingleWriterPersistence's `saved()`. Not public: the versions are an implementation
// detail of the hub; they never wrap.

extension ThreadSafeSingleWriter where Value: ~Copyable {
  /// The version of the newest publication: every checkout that wrote and ended before
  /// this read (and every queued write that ran before it) is in it. Moves only while the
  /// container is observed.
  package var publishedVersion: UInt64 { hub.version }
}

extension ChangeStream.Iterator {
  /// The version the element `next()` last returned belongs to: that element includes
  /// every publication up to this version.
  package var deliveredVersion: UInt64 { cursor.seen }
}
