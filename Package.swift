// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "SingleWriter",
  // The floor Swift concurrency needs; nothing here needs iOS 18's Synchronization.
  platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6)],
  products: [
    .library(name: "SingleWriter", targets: ["SingleWriter"]),
    .library(name: "SingleWriterCompanions", targets: ["SingleWriterCompanions"]),
    .library(name: "SingleWriterPersistence", targets: ["SingleWriterPersistence"]),
  ],
  targets: [
    // The platform layer, in C: atomics, blocking waits, thread ids, a reader-writer
    // lock and race-report diagnostics, so the library needs neither Apple's
    // Synchronization module (iOS 18 / macOS 15) nor a package dependency, and the Swift
    // sources carry no platform branches. Scripts/cross-compile-c.sh checks it for
    // Apple, Windows and musl targets.
    .target(
      name: "SingleWriterAtomics",
      linkerSettings: [
        // WaitOnAddress.
        .linkedLibrary("Synchronization", .when(platforms: [.windows])),
        // dlsym and dladdr, which glibc before 2.34 keeps in libdl.
        .linkedLibrary("dl", .when(platforms: [.linux])),
      ]
    ),
    .target(
      name: "SingleWriter",
      dependencies: ["SingleWriterAtomics"]
    ),
    // ReentrantMutex, BarrierStore and Confined: locks and confinement for code that does
    // not fit a single-writer container, in a module of their own so that importing the
    // containers does not bring them. Their locks take part in the core's lock-order
    // checking through `package` hooks.
    .target(
      name: "SingleWriterCompanions",
      dependencies: ["SingleWriter", "SingleWriterAtomics"]
    ),
    // A ThreadSafeSingleWriter saved to a file on every change: the only library module
    // that imports Foundation, so the core stays free of it.
    .target(
      name: "SingleWriterPersistence",
      dependencies: ["SingleWriter", "SingleWriterAtomics"]
    ),
    .executableTarget(
      name: "Examples",
      dependencies: ["SingleWriter", "SingleWriterCompanions", "SingleWriterPersistence"],
      path: "Examples"
    ),
    .testTarget(
      name: "SingleWriterTests",
      dependencies: ["SingleWriter"]
    ),
    .testTarget(
      name: "SingleWriterCompanionsTests",
      dependencies: ["SingleWriter", "SingleWriterCompanions", "SingleWriterAtomics"]
    ),
    .testTarget(
      name: "SingleWriterPersistenceTests",
      dependencies: ["SingleWriter", "SingleWriterPersistence"]
    ),
  ],
  swiftLanguageModes: [.v6]
)
