// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

// Shell prompts and scripts start the CLI over and over: with no dynamic loader (no libc,
// libstdc++ or libm to map and relocate), a run starts in half the time (docs/PERFORMANCE.md).
// It needs nothing from glibc that only works dynamically: no user or group lookups, no dlopen.
// `-static-executable` links only together with `--static-swift-stdlib`, so it is asked for by
// `make release` (SYNCBADGE_STATIC_CLI=1 beside that flag), and a plain `swift build -c release`
// links a dynamic CLI like any Swift package.
let staticCLI: [LinkerSetting] = Context.environment["SYNCBADGE_STATIC_CLI"] == "1"
    ? [.unsafeFlags(["-static-executable"], .when(platforms: [.linux], configuration: .release))]
    : []

let package = Package(
    name: "SyncBadge",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "syncbadged", targets: ["syncbadged"]),
        .executable(name: "syncbadge", targets: ["syncbadge"]),
        .library(name: "SyncBadgeClient", targets: ["SyncBadgeClient"]),
        .executable(name: "syncbadge-syncthing", targets: ["syncbadge-syncthing"]),
        .executable(name: "syncbadge-git", targets: ["syncbadge-git"]),
        .executable(name: "syncbadge-rclone", targets: ["syncbadge-rclone"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Syncthing's own self-signed GUI certificate is the only one the adapter trusts.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        // libinotifytools ships no pkg-config file, so the system library names its apt package only.
        .systemLibrary(
            name: "CInotifyTools",
            providers: [.apt(["libinotifytools0-dev"])]
        ),
        // glibc's <malloc.h>, for the daemon's allocator settings (Daemon.tuneAllocator).
        .systemLibrary(name: "CMalloc"),
        // The wire: path bytes, percent-encoding, the codec, verbs, roles and the typed requests
        // and answers. No Foundation and no I/O, so every Swift client can link it.
        .target(name: "SyncBadgeProtocol", swiftSettings: strict),
        .target(name: "SyncBadgeCore", dependencies: ["SyncBadgeProtocol"], swiftSettings: strict),
        // What crosses from the watcher thread to the hub (`WatcherMessage`, the `WatcherControl`
        // port, `FileStat`): pure values and one lstat, so that the server links no libinotifytools.
        .target(
            name: "SyncBadgeWatchEvents",
            dependencies: ["SyncBadgeCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(
            name: "SyncBadgeWatcher",
            dependencies: [
                "CInotifyTools", "SyncBadgeCore", "SyncBadgeWatchEvents",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // SQLite's C API from the system's libsqlite3: the store talks to it directly, with no
        // Foundation in between (docs/PACKAGING.md, "Binary size").
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .target(
            name: "SyncBadgeStore",
            dependencies: [
                "CSQLite", "SyncBadgeCore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SyncBadgeServer",
            dependencies: [
                "CMalloc", "SyncBadgeCore", "SyncBadgeWatchEvents", "SyncBadgeStore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(name: "SyncBadgeClient", dependencies: ["SyncBadgeProtocol"], swiftSettings: strict),
        // `--log-level` and the bootstrap of logging to stderr, for the daemon and the adapters.
        .target(
            name: "SyncBadgeLogging",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "syncbadged",
            dependencies: [
                "SyncBadgeServer", "SyncBadgeWatcher", "SyncBadgeLogging",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "syncbadge",
            dependencies: [
                "SyncBadgeClient", "SyncBadgeProtocol", "SyncBadgeCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            linkerSettings: staticCLI
        ),
        // The Syncthing adapter: the pure mapping of Syncthing's events to badge states, tested
        // with recorded events, and the HTTP and socket edges behind small protocols.
        .target(
            name: "SyncthingAdapter",
            dependencies: [
                "SyncBadgeClient", "SyncBadgeProtocol", "SyncBadgeCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "syncbadge-syncthing",
            dependencies: [
                "SyncthingAdapter", "SyncBadgeLogging",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The git adapter: the pure parsing of git's porcelain output and the mapping to badge
        // states, tested with recorded output; the git command line and the daemon at the edges.
        .target(
            name: "GitAdapter",
            dependencies: ["SyncBadgeClient", "SyncBadgeProtocol", "SyncBadgeCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "syncbadge-git",
            dependencies: [
                "GitAdapter", "SyncBadgeLogging",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "GitAdapterTests", dependencies: ["GitAdapter"], swiftSettings: strict),
        // The rclone adapter: the pure mapping of rclone's rc answers and VFS cache metadata to
        // badge states (Mapping/), tested with JSON recorded from rclone 1.60.1 and documented for
        // 1.68; the rc over HTTP, the mount table and the daemon at the edges (IO/). The provider
        // connection and the state connection are the Syncthing adapter's.
        .target(
            name: "RcloneAdapter",
            dependencies: [
                "SyncBadgeClient", "SyncBadgeProtocol", "SyncBadgeCore", "SyncthingAdapter",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "syncbadge-rclone",
            dependencies: [
                "RcloneAdapter", "SyncBadgeLogging",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RcloneAdapterTests",
            dependencies: [
                "RcloneAdapter",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // Recorded from rclone 1.60.1, and documented for 1.68, read through #filePath.
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        // `make reliability`'s fast-forward soak: the daemon in-process, fed synthetic events.
        .executableTarget(
            name: "syncbadge-soak",
            dependencies: [
                "SyncBadgeServer", "SyncBadgeClient", "SyncBadgeCore", "SyncBadgeWatcher", "SyncBadgeWatchEvents",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "SyncBadgeProtocolTests", dependencies: ["SyncBadgeProtocol"], swiftSettings: strict),
        .testTarget(name: "SyncBadgeCoreTests", dependencies: ["SyncBadgeCore", "SyncBadgeProtocol"], swiftSettings: strict),
        .testTarget(
            name: "SyncBadgeWatcherTests",
            dependencies: ["SyncBadgeWatcher", "SyncBadgeWatchEvents", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncBadgeStoreTests",
            dependencies: ["SyncBadgeStore", "CSQLite", "SyncBadgeCore"],
            // SQL dumps of databases the GRDB-based store wrote, read through #filePath.
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncthingAdapterTests",
            dependencies: [
                "SyncthingAdapter",
                .product(name: "Logging", package: "swift-log"),
                // A TLS server with a certificate like Syncthing's, for the pinning tunnel.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // Recorded from Syncthing 1.19.2, read through #filePath.
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SyncBadgeServerTests",
            dependencies: [
                "SyncBadgeServer", "SyncBadgeCore", "SyncBadgeStore", "SyncBadgeWatchEvents",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // End-to-end: the real binaries against real temporary directories.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "SyncBadgeClient", "syncbadged", "syncbadge", "syncbadge-soak", "syncbadge-syncthing", "syncbadge-git", "syncbadge-rclone",
                // The adapters' provider connection, run in-process against the real daemon.
                "SyncthingAdapter", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
    ]
)
