import SingleWriterAtomics

#if DEBUG
  /// Where the two locks of an edge were taken, kept for the report of its inversion.
  struct LockEdgeSites {
    let held: LockSite
    let heldBy: String
    let taken: LockSite
    let takenBy: String
    /// Its inversion has been reported: a pair is reported once.
    var reported = false
  }
#endif
