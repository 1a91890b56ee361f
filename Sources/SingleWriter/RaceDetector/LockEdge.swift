import SingleWriterAtomics

#if DEBUG
  /// An edge of the lock graph: `to` taken while `from` was held.
  struct LockEdge: Hashable {
    let from: UInt
    let to: UInt
  }
#endif
