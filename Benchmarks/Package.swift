// swift-tools-version: 6.1
// In-process benchmarks (ordo-one/benchmark), kept out of the main package so that
// `make test` never builds them: `make bench` runs them, then the system-level figures.
// SyncBadgeProtocol's and SyncBadgeCore's sources are this package's own targets through symlinks, because a
// path dependency on the repository would be named after whatever its clone is called.
import PackageDescription

let package = Package(
    name: "SyncBadgeBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(name: "SyncBadgeProtocol", path: "Sources/SyncBadgeProtocol", swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(name: "SyncBadgeCore", dependencies: ["SyncBadgeProtocol"], path: "Sources/SyncBadgeCore",
                swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                "SyncBadgeCore",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
