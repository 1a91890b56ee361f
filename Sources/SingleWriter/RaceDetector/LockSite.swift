import SingleWriterAtomics

#if DEBUG
  /// Where a lock was taken: the site of the public call, passed down to the hooks.
  struct LockSite {
    let file: StaticString
    let function: StaticString
    let line: UInt
  }
#endif
