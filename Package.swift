// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "SingleWriter",
  // The floor Swift concurrency needs; nothing here needs iOS 18's Synchronization.
  platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6)],
  products: [
    .library(name: "SingleWriter", targets: ["SingleWriter"])
  ],
  targets: [
    // C11 atomics and a futex-backed wait, so the library needs neither
    // Apple's Synchronization module (iOS 18 / macOS 15) nor a package dependency.
    .target(
      name: "SingleWriterAtomics",
      linkerSettings: [.linkedLibrary("Synchronization", .when(platforms: [.windows]))]
    ),
    .target(
      name: "SingleWriter",
      dependencies: ["SingleWriterAtomics"]
    ),
    .executableTarget(
      name: "Examples",
      dependencies: ["SingleWriter"],
      path: "Examples"
    ),
    .testTarget(
      name: "SingleWriterTests",
      dependencies: ["SingleWriter"]
    ),
  ],
  swiftLanguageModes: [.v6]
)
