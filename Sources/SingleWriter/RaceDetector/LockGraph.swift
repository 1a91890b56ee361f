// The process-wide half of lock-order checking: which lock has been taken while holding
// which, where, and the checkouts held through proxies. Debug only.
import SingleWriterAtomics

#if DEBUG
  /// Every edge seen and every checkout held, behind one lock. The fast paths read only
  /// `lockOrderWords`; a thread's `LockStack` remembers the edges it has seen, so steady
  /// state takes this lock only for checkouts.
  final class LockGraph: @unchecked Sendable {
    // Sendable: the dictionaries and arrays are only touched with `mutex` held; the
    // words are atomics.
    static let shared = LockGraph()

    private let mutex = RaceMutex()
    private var edges: [LockEdge: LockEdgeSites] = [:]
    /// Each lock's neighbours in either direction, for dropping its edges when it is freed.
    private var neighbours: [UInt: [UInt]] = [:]
    private var checkouts: [CheckoutHold] = []
    /// Served writes reported, by container and lock: each pair once.
    private var servedReported: Set<LockEdge> = []

    private init() {}

    // MARK: Edges

    /// Records `to` taken at `site` while `from`, taken at `heldSite`, is held by this
    /// thread (`heldBy` nil) or by the proxy holder `heldBy`; reports the pair if the
    /// opposite edge exists.
    func record(_ from: UInt, _ heldSite: LockSite, heldBy: String?, to: UInt, _ site: LockSite) {
      mutex.lock()
      let report = recordLocked(from, heldSite, heldBy: heldBy, to: to, site)
      mutex.unlock()
      if let report { deliver(report) }
    }

    /// `record` with `mutex` held: returns the report to deliver once it is released.
    private func recordLocked(
      _ from: UInt, _ heldSite: LockSite, heldBy: String?, to: UInt, _ site: LockSite
    ) -> RaceReport? {
      let edge = LockEdge(from: from, to: to)
      guard edges[edge] == nil else { return nil }
      var context = RaceContext.current
      let here = context.describe(.current)
      var sites = LockEdgeSites(
        held: heldSite, heldBy: heldBy ?? here, taken: site, takenBy: here)
      neighbours[from, default: []].append(to)
      neighbours[to, default: []].append(from)
      lockOrderWords.setBit(from)
      lockOrderWords.setBit(to)
      let reverse = LockEdge(from: to, to: from)
      guard let opposite = edges[reverse], !opposite.reported else {
        edges[edge] = sites
        return nil
      }
      sites.reported = true
      edges[edge] = sites
      edges[reverse]!.reported = true
      return inversionReport(from, to, now: sites, before: opposite)
    }

    // MARK: Checkouts

    /// `id` is checked out through a proxy whose holder the container recorded as
    /// `holder` (see `CheckoutHold`).
    func checkedOut(_ id: UInt, holder: UInt, _ site: LockSite) {
      let hold = CheckoutHold(
        id: id, holder: holder, thread: sw_current_thread(), task: sw_current_task(),
        site: site)
      mutex.lock()
      checkouts.append(hold)
      lockOrderWords.setCheckouts(checkouts.count)
      mutex.unlock()
    }

    func checkoutEnded(_ id: UInt) {
      mutex.lock()
      var index = 0
      while index < checkouts.count {
        if checkouts[index].id == id {
          checkouts.remove(at: index)
          break
        }
        index += 1
      }
      lockOrderWords.setCheckouts(checkouts.count)
      mutex.unlock()
    }

    /// Records an edge to `id` from every checkout the current task (or thread, outside
    /// any task) holds; while serving a container's queue, a checkout of `id` itself means
    /// a served write takes it.
    func recordFromCheckouts(to id: UInt, _ site: LockSite, servingFor container: UInt?) {
      // The identities the hand-off records, never reused: an address would be given to a
      // later thread or task while a proxy its first owner took lives on.
      let serial = sw_current_thread_serial()
      let taskHolder = sw_current_task_holder()
      var reports: [RaceReport] = []
      mutex.lock()
      var index = 0
      while index < checkouts.count {
        let hold = checkouts[index]
        index += 1
        guard hold.isHeld(bySerial: serial, taskHolder: taskHolder) else { continue }
        if hold.id != id {
          if let report = recordLocked(hold.id, hold.site, heldBy: hold.holderName, to: id, site) {
            reports.append(report)
          }
        } else if let container,
          let report = servedLocked(id, hold.site, hold.holderName, site, container)
        {
          reports.append(report)
        }
      }
      mutex.unlock()
      for report in reports { deliver(report) }
    }

    // MARK: Served writes

    /// A write served for `container`'s queue takes `id` at `site`, which this thread
    /// (`heldBy` nil) or its task took at `heldSite` before serving.
    func servedWriteTakes(
      _ id: UInt, heldAt heldSite: LockSite, heldBy: String?, at site: LockSite,
      serving container: UInt
    ) {
      mutex.lock()
      var context = RaceContext.current
      let report = servedLocked(
        id, heldSite, heldBy ?? context.describe(.current), site, container)
      mutex.unlock()
      if let report { deliver(report) }
    }

    private func servedLocked(
      _ id: UInt, _ heldSite: LockSite, _ heldBy: String, _ site: LockSite, _ container: UInt
    ) -> RaceReport? {
      guard servedReported.insert(LockEdge(from: container, to: id)).inserted else { return nil }
      lockOrderWords.setBit(container)
      lockOrderWords.setBit(id)
      var context = RaceContext.current
      let lock = Self.name(id)
      let order = RaceReport.LockOrder(
        held: Self.acquisition(lock, heldSite, heldBy),
        taken: Self.acquisition(lock, site, context.describe(.current)))
      return RaceReport(
        kind: .servedWriteTakesHeldLock, resource: lock, order: order, opposite: nil,
        callStack: currentCallStack(),
        advice: "The queued write was served for \(Self.name(container)).")
    }

    // MARK: Freeing

    /// Drops every edge of `id`, which is being freed.
    func forget(_ id: UInt) {
      mutex.lock()
      if let others = neighbours.removeValue(forKey: id) {
        for other in others {
          edges[LockEdge(from: id, to: other)] = nil
          edges[LockEdge(from: other, to: id)] = nil
          neighbours[other]?.removeAll { $0 == id }
          if neighbours[other]?.isEmpty == true { neighbours[other] = nil }
        }
        lockOrderWords.nextGeneration()
      }
      if !servedReported.isEmpty {
        servedReported = servedReported.filter { $0.from != id && $0.to != id }
      }
      mutex.unlock()
    }

    // MARK: Reports

    /// A live lock's name: its type and address, as a race report names a container. Only
    /// for locks held or being taken.
    static func name(_ id: UInt) -> String {
      let object = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: id)!)
        .takeUnretainedValue()
      return "\(type(of: object)) \(UnsafeRawPointer(bitPattern: id)!)"
    }

    static func acquisition(_ lock: String, _ site: LockSite, _ thread: String)
      -> RaceReport.Acquisition
    {
      RaceReport.Acquisition(
        lock: lock, file: "\(site.file)", function: "\(site.function)", line: site.line,
        thread: thread)
    }

    private func inversionReport(
      _ first: UInt, _ second: UInt, now: LockEdgeSites, before: LockEdgeSites
    ) -> RaceReport {
      let firstName = Self.name(first)
      let secondName = Self.name(second)
      let order = RaceReport.LockOrder(
        held: Self.acquisition(firstName, now.held, now.heldBy),
        taken: Self.acquisition(secondName, now.taken, now.takenBy))
      let opposite = RaceReport.LockOrder(
        held: Self.acquisition(secondName, before.held, before.heldBy),
        taken: Self.acquisition(firstName, before.taken, before.takenBy))
      return RaceReport(
        kind: .lockOrderInversion, resource: "\(firstName) and \(secondName)", order: order,
        opposite: opposite, callStack: currentCallStack(), advice: nil)
    }

    /// Hands a report to the handler, with no lock held: it may stop the program, or take
    /// locks of its own.
    private func deliver(_ report: RaceReport) {
      RaceHandlerStore.shared.handler(report)
    }
  }
#endif
