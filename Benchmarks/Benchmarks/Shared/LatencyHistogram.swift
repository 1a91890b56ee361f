/// Latencies in ns, counted in buckets 1/16 of a power of two wide (at most 6.25%), with
/// the exact maximum and the exact count over a limit. Every tool reports its percentiles
/// from this one type, so that a p99 means the same thing in every table.
///
/// One per thread while it records (recording is a few plain stores, cheap enough to sit
/// between two measured calls); merged by the main thread once the threads are done.
public final class LatencyHistogram: @unchecked Sendable {
  // Unchecked: written only by the thread it was given to while that thread runs; read and
  // merged by the main thread after a join (`DispatchGroup.wait()`), which orders the writes.

  /// Enough buckets for every `UInt64`: values below 32 exactly, then 16 per power of two.
  @inlinable public static var bucketCount: Int { 32 + 59 * 16 }
  /// The limit of `countOverLimit`: 10 ms, the contended goal's bound.
  @inlinable public static var limit: UInt64 { 10_000_000 }

  // Laid out as the tools' histograms always were (buckets, max, total; the count over the
  // limit after the last bucket), and with no exclusivity check on the counters, which code
  // inlined into another module would otherwise make at each record: three runtime calls
  // between two measured calls. Safe: one thread records into a histogram at a time.
  @usableFromInline let counts: UnsafeMutablePointer<Int>
  @usableFromInline @exclusivity(unchecked) var maxSeen: UInt64 = 0
  @usableFromInline @exclusivity(unchecked) var recorded = 0

  /// The largest value recorded (exact).
  public var max: UInt64 { maxSeen }
  /// Values recorded.
  public var total: Int { recorded }
  /// Values above `limit` (exact, where a bucket would blur it) among those counted with
  /// `record(_:)`.
  public var countOverLimit: Int { counts[Self.bucketCount] }

  /// An empty histogram.
  public init() {
    counts = .allocate(capacity: Self.bucketCount + 1)
    counts.initialize(repeating: 0, count: Self.bucketCount + 1)
  }

  /// A snapshot of counts kept elsewhere (the server counts with atomics), to read
  /// quantiles from; `counts` are per bucket of `bucket(_:)`.
  public convenience init(counts: [Int], max: UInt64) {
    self.init()
    for (index, count) in counts.prefix(Self.bucketCount).enumerated() {
      self.counts[index] = count
      recorded += count
    }
    maxSeen = max
  }

  deinit { counts.deallocate() }

  /// The bucket that holds `ns`.
  @inlinable @inline(__always)
  public static func bucket(_ ns: UInt64) -> Int {
    if ns < 32 { return Int(ns) }
    let exponent = 63 - ns.leadingZeroBitCount
    return 32 + (exponent - 5) * 16 + Int((ns >> UInt64(exponent - 4)) & 15)
  }

  /// The largest value bucket `index` holds.
  public static func upperBound(_ index: Int) -> UInt64 {
    if index < 32 { return UInt64(index) }
    let exponent = (index - 32) / 16 + 5
    return (UInt64(16 + (index - 32) % 16 + 1) << UInt64(exponent - 4)) - 1
  }

  /// Counts one value, and counts it in `countOverLimit` if it is above the limit.
  @inlinable @inline(__always)
  public func record(_ ns: UInt64) {
    recordLeavingOutLimit(ns)
    if ns > Self.limit { counts[Self.bucketCount] += 1 }
  }

  /// Counts one value but leaves `countOverLimit` alone: no compare against the limit, so
  /// that the loops that record between two reads of a few ns each (the transactions tool's,
  /// which never report that count) run the code they always ran.
  @inlinable @inline(__always)
  public func recordLeavingOutLimit(_ ns: UInt64) {
    counts[Self.bucket(ns)] += 1
    recorded += 1
    if ns > maxSeen { maxSeen = ns }
  }

  /// Adds `other`'s counts to these.
  public func merge(_ other: LatencyHistogram) {
    for index in 0...Self.bucketCount { counts[index] += other.counts[index] }
    recorded += other.recorded
    maxSeen = Swift.max(maxSeen, other.maxSeen)
  }

  /// The value at quantile `q`, rounded up to its bucket's upper bound (at most 6.25% high)
  /// and never above the max; the exact max for q = 1, and 0 when empty.
  public func quantile(_ q: Double) -> UInt64 {
    if q >= 1 { return max }
    let rank = Swift.max(1, Int((q * Double(total)).rounded(.up)))
    var seen = 0
    for index in 0..<Self.bucketCount {
      seen += counts[index]
      if seen >= rank { return Swift.min(Self.upperBound(index), max) }
    }
    return max
  }

  /// Values below `bound` (exact when `bound` is a power of two of at least 32, or below 32).
  public func count(below bound: UInt64) -> Int {
    (0..<Self.bucket(bound)).reduce(0) { $0 + counts[$1] }
  }

  /// Values in buckets above the one holding `bound`: above `bound`, give or take a bucket.
  public func count(above bound: UInt64) -> Int {
    ((Self.bucket(bound) + 1)..<Self.bucketCount).reduce(0) { $0 + counts[$1] }
  }

  /// Counts in display buckets split at `bounds` (ascending powers of two of at least 32),
  /// then at `limit`, exactly: one count below the first bound, one between each two, one
  /// from the last up to `limit` and one over it.
  public func counts(splitAt bounds: [UInt64]) -> [Int] {
    let below = bounds.map { count(below: $0) } + [total - countOverLimit]
    return zip(below, [0] + below).map { $0 - $1 } + [countOverLimit]
  }
}
