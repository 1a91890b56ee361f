import SingleWriterAtomics

#if DEBUG
  /// A thread's name, read once per thread and kept in a thread-local slot: reading it
  /// costs a system call, and a report needs the name of a thread that may be busy
  /// elsewhere by then.
  final class ThreadLabel: Sendable {
    let name: String
    /// Whether `name` may be only the start of the thread's name.
    let isTruncated: Bool
    let isMain: Bool

    init(name: String, isTruncated: Bool, isMain: Bool) {
      self.name = name
      self.isTruncated = isTruncated
      self.isMain = isMain
    }

    static var current: ThreadLabel {
      if let slot = sw_thread_slot_get(threadLabelSlot) {
        return Unmanaged<ThreadLabel>.fromOpaque(slot).takeUnretainedValue()
      }
      let label = currentThreadLabel()
      // The slot's +1 on the label is dropped when its thread exits.
      sw_thread_slot_set(threadLabelSlot, Unmanaged.passRetained(label).toOpaque())
      return label
    }
  }
#endif
