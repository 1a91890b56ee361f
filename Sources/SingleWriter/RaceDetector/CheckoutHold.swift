import SingleWriterAtomics

#if DEBUG
  /// A checkout held through a proxy, by a task, or by a thread outside any task.
  struct CheckoutHold {
    let id: UInt
    /// Who holds it: the identity the container recorded for the proxy's holder
    /// (`WriterLock.recordHolder`), a task's number or a thread's serial, never given to
    /// another task or thread, as the hand-off, the bound and the warnings know it.
    let holder: UInt
    /// The thread and task that took it, for naming them in reports only: either
    /// address may be given to a later thread or task once this one ends.
    let thread: UInt
    let task: UInt
    let site: LockSite

    /// Whether the caller holds it (`WriterLock.isCaller`): a task holds what it took,
    /// wherever it runs now; a thread holds what it took outside any task, whatever it
    /// runs. `serial` and `taskHolder` are the caller's, looked up once per walk.
    func isHeld(bySerial serial: UInt, taskHolder: UInt) -> Bool {
      holder & 1 == 0 ? holder == serial : holder == taskHolder
    }

    var holderName: String { task == 0 ? "thread " + hex(thread) : "task " + hex(task) }
  }
#endif
