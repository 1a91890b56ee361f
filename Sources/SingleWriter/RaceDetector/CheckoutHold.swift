import SingleWriterAtomics

#if DEBUG
  /// A checkout held through a proxy, by a task, or by a thread outside any task.
  struct CheckoutHold {
    let id: UInt
    let thread: UInt
    let task: UInt
    let site: LockSite

    /// Whether the current thread and task hold it: a task holds what it took, wherever
    /// it runs now; a thread holds what it took outside any task, whatever it runs.
    func isHeld(byThread thread: UInt, task: UInt) -> Bool {
      self.task == 0 ? self.thread == thread : self.task == task
    }

    var holder: String { task == 0 ? "thread " + hex(thread) : "task " + hex(task) }
  }
#endif
