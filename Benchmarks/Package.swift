// swift-tools-version:6.1
import PackageDescription

// Benchmarks for SingleWriter, kept out of the root package so that the library
// stays free of dependencies. Every suite is its own executable (the layout
// swift-nio uses) and reaches the library the way a user does: from another
// module, in release.
//
//   swift package --package-path Benchmarks --disable-sandbox benchmark
//   Benchmarks/compare.sh           # one markdown table of ratios
//   Benchmarks/compare.sh --check   # fail if a ratio regressed
let package = Package(
  name: "SingleWriterBenchmarks",
  platforms: [.macOS(.v15)],  // Synchronization.Mutex, the reference row
  dependencies: [
    .package(name: "SingleWriter", path: ".."),
    .package(
      url: "https://github.com/ordo-one/package-benchmark",
      from: "1.38.1",
      traits: ["MallocInterposer"]
    ),
    // Only for the server example (Tools/Server); no benchmark suite links them.
    .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    // Only for Tools/Persistence: the same value kept in SQLite, beside PersistedState.
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
  ],
  targets: [
    // Shared fixtures, and the article's algorithm as a baseline: a module of its
    // own, so every suite calls it across a module boundary like a user's code.
    .target(
      name: "BenchmarkSupport",
      dependencies: [.product(name: "SingleWriter", package: "SingleWriter")],
      path: "Benchmarks/Shared"
    ),
    // The defaults and the Mutex reference row every suite shares.
    .target(
      name: "BenchmarkSuite",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "Benchmark", package: "package-benchmark"),
      ],
      path: "Benchmarks/Suite"
    ),
    // Finds the deepest queue the article's recursive drain survives.
    .executableTarget(
      name: "ArticleDepthProbe",
      dependencies: ["BenchmarkSupport"],
      path: "Tools/ArticleDepthProbe"
    ),
    // One path per run, for `valgrind --tool=callgrind`.
    .executableTarget(
      name: "Profile",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "SingleWriter", package: "SingleWriter"),
      ],
      path: "Tools/Profile"
    ),
    // Contended increments at 2, 4 and 8 threads, with overlap and sanity checks that
    // package-benchmark cannot make; run by compare.sh (see README.md, Contended).
    .executableTarget(
      name: "Contended",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "SingleWriter", package: "SingleWriter"),
      ],
      path: "Tools/Contended"
    ),
    // Contended `await write` from tasks on the cooperative pool, against Mutex and an
    // actor; run by compare.sh after Contended.
    .executableTarget(
      name: "AsyncContended",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "SingleWriter", package: "SingleWriter"),
      ],
      path: "Tools/AsyncContended"
    ),
    // Long transactions while other threads read, and a single-flight token refresh:
    // the case the design is for, against locks and actors; run by compare.sh.
    .executableTarget(
      name: "Transactions",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "SingleWriter", package: "SingleWriter"),
      ],
      path: "Tools/Transactions"
    ),
    // A token refresh and small writes from 8, 64 and 256 tasks on the default pool,
    // against an actor and Mutex; run quiet and beside a busy loop per core by scaling.sh.
    .executableTarget(
      name: "Scaling",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "SingleWriter", package: "SingleWriter"),
      ],
      path: "Tools/Scaling"
    ),
    // PersistedState against the same container unsaved, and against GRDB keeping the
    // same value in SQLite: write cost, saves under a storm, time to durable.
    .executableTarget(
      name: "Persistence",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "SingleWriter", package: "SingleWriter"),
        .product(name: "SingleWriterPersistence", package: "SingleWriter"),
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      path: "Tools/Persistence"
    ),
    // Turns the suites' samples into the ratio table (and checks it against
    // ratios-baseline.json), and Tools/Transactions' JSON into the README's chart.
    .executableTarget(
      name: "Report",
      dependencies: ["BenchmarkSupport"],
      path: "Tools/Report"
    ),
    // A Hummingbird server whose handlers read state that a background task rebuilds in
    // long transactions, over one of four containers; loaded by server-bench.sh.
    .executableTarget(
      name: "Server",
      dependencies: [
        "BenchmarkSupport",
        .product(name: "SingleWriter", package: "SingleWriter"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
      ],
      path: "Tools/Server"
    ),
  ],
  swiftLanguageModes: [.v6]
)

// One executable per suite, each with the BenchmarkPlugin.
for suite in [
  "Write", "Read", "Queue", "Append", "Observed",
  "Companions",  // ReentrantMutex, BarrierStore, Confined
] {
  package.targets.append(
    .executableTarget(
      name: suite,
      dependencies: [
        "BenchmarkSupport",
        "BenchmarkSuite",
        .product(name: "SingleWriter", package: "SingleWriter"),
        .product(name: "Benchmark", package: "package-benchmark"),
      ]
        + (suite == "Companions"
          ? [.product(name: "SingleWriterCompanions", package: "SingleWriter")] : []),
      path: "Benchmarks/\(suite)",
      plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
    )
  )
}
