import SingleWriter

/// Async writes that wait their turn by suspending, and a stream of changes.
func asyncWalkthrough() async {
  struct Session: Sendable {
    var user = "anonymous"
    var requests = 0
  }
  let session = ThreadSafeSingleWriter(value: Session())

  // Subscribe now; a task reads the stream: the current value, then each write.
  let changes = session.changes()
  let watcher = Task {
    var last = ""
    for await value in changes {
      last = "\(value.user)/\(value.requests)"
      if value.requests == 3 { break }
    }
    return last
  }

  // Hold the writer across an await; an async write queues behind it, suspended.
  var proxy: ThreadSafeWriterProxy<Session>? = try! await session.checkout()
  let queued = Task { await session.write { $0.requests += 1 } }
  proxy!.write.user = "sally"
  print("user while the checkout is held: \(session.read.user)")  // sally
  proxy = nil  // released here at the latest: the queued write then runs
  await queued.value
  for _ in 0..<2 { await session.write { $0.requests += 1 } }
  print("requests: \(session.read.requests)")  // 3

  // `write` waits its turn even in a cancelled task, as Mutex.withLock does;
  // writeUnlessCancelled leaves the queue and throws instead, writing nothing.
  var held = session.writer
  let cancelled = Task { try await session.writeUnlessCancelled { $0.user = "never" } }
  cancelled.cancel()
  let wrote = (try? await cancelled.value) != nil
  held = nil
  print("cancelled write ran: \(wrote); user: \(session.read.user)")  // false; sally
  _ = held

  // A slow consumer skips to the newest value instead of building a backlog.
  print("newest change seen by the watcher: \(await watcher.value)")  // sally/3
}
