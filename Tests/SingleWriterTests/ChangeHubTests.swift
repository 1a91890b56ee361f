import Testing

@testable import SingleWriter

/// A task that waits for a change after `hub`'s current version, once it sleeps there.
private func sleeping(on hub: ChangeHub) async -> Task<Void, Never> {
  let seen = hub.version
  let id = hub.makeSleeperID()
  let sleeper = Task { await hub.waitForChange(after: seen, id: id) }
  await waitUntil { hub.withLock { !hub.sleepers.isEmpty } }
  return sleeper
}

@Suite struct ChangeHubTests {
  @Test func publicationsBetweenTwoLooksMoveTheVersionOnce() {
    let hub = ChangeHub()
    let before = hub.version
    hub.publish()
    #expect(hub.current.isPending, "a publication only marks the word")
    #expect(hub.current.version == before, "nobody has looked yet")
    hub.publish()
    #expect(hub.version == before &+ 1, "a look collects both")
    #expect(!hub.current.isPending)
    #expect(hub.version == before &+ 1, "nothing new: the version stays")
    hub.publish()
    #expect(hub.version == before &+ 2, "a publication after a look moves it again")
    #expect(hub.wakeCount == 0, "nobody sleeps: no wake-up")
  }

  @Test func aPublicationThatFindsPendingAndNobodyToTellLeavesTheWordAlone() {
    let hub = ChangeHub()
    hub.publish()
    let marked = hub.current
    hub.publish()
    #expect(hub.current == marked)
  }

  @Test func aConsumerBehindTheVersionDoesNotSleep() async {
    let hub = ChangeHub()
    let seen = hub.version
    hub.publish()
    await hub.waitForChange(after: seen, id: hub.makeSleeperID())
    #expect(hub.sleepers.isEmpty)
  }

  @Test func aBatchOfPublicationsWakesASleeperOnce() async {
    let hub = ChangeHub()
    let seen = hub.version
    let sleeper = await sleeping(on: hub)
    for _ in 0..<100 { hub.publish() }
    await sleeper.value
    #expect(hub.withLock { hub.wakeCount } == 1)
    #expect(hub.version == seen &+ 1, "one batch, collected once")
  }

  @Test func closingWakesEverySleeper() async {
    let hub = ChangeHub()
    let seen = hub.version
    let first = hub.makeSleeperID()
    let second = hub.makeSleeperID()
    let sleepers = [
      Task { await hub.waitForChange(after: seen, id: first) },
      Task { await hub.waitForChange(after: seen, id: second) },
    ]
    await waitUntil { hub.withLock { hub.sleepers.count } == 2 }
    hub.close(keeping: 0)
    for sleeper in sleepers { await sleeper.value }
    #expect(hub.isClosed)
    #expect(!hub.current.isWaiting, "closing leaves nothing waiting")
    await hub.waitForChange(after: seen, id: first)  // closed: returns at once
    #expect(!hub.current.isWaiting, "nobody sleeps on a closed hub")
  }

  @Test func closingKeepsTheLastValueOnlyForASubscription() {
    let unobserved = ChangeHub()
    unobserved.close(keeping: 1)
    #expect(unobserved.lastValue(of: Int.self) == nil, "nobody to read it")
    let hub = ChangeHub()
    let version = hub.version
    hub.withLock { hub.subscriptions = 1 }
    hub.close(keeping: 8)
    #expect(hub.lastValue(of: Int.self) == 8)
    #expect(hub.version == version, "the version the kept value belongs to")
  }

  @Test func closingCollectsWhatIsPending() {
    let hub = ChangeHub()
    let version = hub.version
    hub.publish()
    hub.close(keeping: 8)
    #expect(!hub.current.isPending)
    #expect(hub.current.version == version &+ 1, "the final value's version")
  }

  @Test func aConsumerDoesNotSleepWhileAPublicationIsPending() async {
    let hub = ChangeHub()
    let seen = hub.current.version
    hub.publish()
    // Up to date by the word's version, but a publication waits to be collected.
    await hub.waitForChange(after: seen, id: hub.makeSleeperID())
    #expect(hub.withLock { hub.sleepers.isEmpty })
    #expect(!hub.current.isWaiting)
  }

  @Test func cancellingASleeperRemovesIt() async {
    let hub = ChangeHub()
    let seen = hub.version
    let sleeper = await sleeping(on: hub)
    sleeper.cancel()
    await sleeper.value
    #expect(hub.withLock { hub.sleepers.isEmpty })
    #expect(hub.version == seen)
  }

  @Test func aCancelledTaskDoesNotSleep() async {
    let hub = ChangeHub()
    let seen = hub.version
    let id = hub.makeSleeperID()
    let sleeper = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      await hub.waitForChange(after: seen, id: id)
    }
    await sleeper.value
    #expect(hub.withLock { hub.sleepers.isEmpty })
  }
}
