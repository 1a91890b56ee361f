import SingleWriter

/// Transactions: several changes that readers see all at once or not at all.
func transactionWalkthrough() async {
  struct Settings: Sendable {
    var theme = "light"
    var version = 0
  }
  let settings = ThreadSafeSingleWriter(value: Settings())

  // The body works on its own copy: a read inside it, like any reader, sees the value
  // from before, and never waits for the body.
  settings.transaction { draft in
    draft.theme = "dark"
    print("inside, readers see: \(settings.read.theme)/\(settings.read.version)")  // light/0
    draft.version = 1
  }
  print("after the commit: \(settings.read.theme)/\(settings.read.version)")  // dark/1

  // A throw undoes the transaction: nothing it wrote is ever seen.
  struct Invalid: Error {}
  do {
    try settings.transaction { (draft: inout Settings) throws(Invalid) in
      draft.theme = "neon"
      throw Invalid()
    }
  } catch {
    print("thrown: \(settings.read.theme)")  // dark
  }

  // Async: the body holds the writer across its awaits, as a token refresh would; readers
  // keep the old value until the new one is whole, and writes queued meanwhile run after.
  struct Session: Sendable {
    var token = "old"
    var refreshToken = "r0"
  }
  let session = ThreadSafeSingleWriter(value: Session())
  func fetchTokens() async -> (String, String) {
    await Task.yield()
    return ("new", "r1")
  }
  try! await session.transaction { draft in
    let (token, refresh) = await fetchTokens()
    draft.token = token
    session.writeNext { $0.write.token += "!" }  // queued: runs after the commit
    print("during the refresh, readers see: \(session.read.token)")  // old
    draft.refreshToken = refresh
  }
  await session.drained()
  print("after: \(session.read.token)/\(session.read.refreshToken)")  // new!/r1

  // SingleWriter: nil when the writer is out, as tryWrite; the result is not discardable.
  let local = SingleWriter(value: Settings())
  let held = local.writer
  let ran = local.transaction { $0.version += 1 } != nil
  print("ran while the writer was out: \(ran)")  // false
  withExtendedLifetime(held) {}
}
