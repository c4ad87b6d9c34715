// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "JournalLog",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        // An app's one product: the engine, the list model and queries, the sync engine and its
        // URLSession HTTP client, all re-exported by `import JournalKit`.
        .library(name: "JournalKit", targets: ["JournalKit"]),
        .library(name: "JournalLog", targets: ["JournalLog"]),
        .library(name: "ListModel", targets: ["ListModel"]),
        .library(name: "JournalQuery", targets: ["JournalQuery"]),
        .library(name: "JournalSync", targets: ["JournalSync"]),
        .library(name: "JournalSyncWire", targets: ["JournalSyncWire"]),
        .library(name: "JournalService", targets: ["JournalService"]),
        .library(name: "JournalServer", targets: ["JournalServer"]),
        .library(name: "JournalSyncHTTP", targets: ["JournalSyncHTTP"]),
        .library(name: "JournalSyncHTTPNIO", targets: ["JournalSyncHTTPNIO"]),
        // Sealed lists (Spec/SEALING.md): its own product, so that no other target needs crypto.
        .library(name: "JournalSeal", targets: ["JournalSeal"]),
        .executable(name: "jlog", targets: ["jlog"]),
        .executable(name: "jlog-bench", targets: ["jlog-bench"]),
        .executable(name: "jlog-load", targets: ["jlog-load"]),
    ],
    // `Server` (on by default: the project's own build and tests) brings the server's, the CLI's
    // and the benchmarks' dependencies. An app that depends on this package with `traits: []`
    // resolves none of them: only swift-system, which the engine uses (Package.swift of
    // scripts/app-client-check.sh).
    traits: [
        .trait(name: "Server", description: "jlog, jlog serve, the PostgreSQL backend, the benchmarks and the tests' dependencies",
               enabledTraits: ["Sealing"]),
        // Apple platforms seal with CryptoKit; elsewhere JournalSeal needs swift-crypto.
        .trait(name: "Sealing", description: "swift-crypto for JournalSeal where CryptoKit is not (Linux)"),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
        // Only the network targets (JournalServer, JournalSyncHTTP) and the CLI use these: an
        // embedder of the engine or the sync layer builds no SwiftNIO.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.60.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.0.0"),
        // `jlog serve`'s metrics: swift-metrics (Hummingbird already uses it) exported by Prometheus.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // The PostgreSQL backend's client (JournalPostgres, and the CLI that links it).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.5.3"),
        // `swift package generate-documentation` (the DocC catalogs; CI builds them).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Layer 0: C helpers. CRC32C needs no unsafeFlags (target attribute + runtime check).
        .target(name: "CCRC32C"),
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // Only the benchmark links SQLite, to measure JournalLog against it in the same run.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Layer 1: pure codec and domain model. No I/O; every parser here is fuzzable.
        .target(name: "JournalCodec", dependencies: ["CCRC32C", "CLZ4"]),
        // Layer 1: the shopping-list model (reducer, merge rules, history, snapshot payloads).
        // Pure like the codec (no I/O, no threads: a caller may lend it threads through
        // `ReducerHelpers`); it plugs into the log, which knows nothing about lists.
        .target(name: "ListModel", dependencies: ["JournalCodec"]),
        // Layer 2: storage (segments, writer, recovery, readers).
        .target(
            name: "JournalLog",
            dependencies: [
                "JournalCodec",
                "CCRC32C",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Layer 3: the query layer: list state, history and snapshots, read through the feed.
        .target(name: "JournalQuery", dependencies: ["JournalLog", "ListModel"]),
        // Layer 4: sync. The protocol a service offers (CloudKit-shaped) and the client engine;
        // no networking here: transports live in their own targets.
        .target(name: "JournalSync", dependencies: ["JournalLog", "JournalQuery", "ListModel", .product(name: "Logging", package: "swift-log")]),
        // Layer 4: the HTTP binding's wire (JSON bodies, status codes, percent-encoding), device
        // credentials and the server's accounts file: what a client and a server must agree on,
        // with no networking of its own (Foundation only).
        .target(name: "JournalSyncWire", dependencies: ["JournalSync", "JournalLog"]),
        // Layer 4: the reference sync service over a JournalStore (accounts' databases, sharing,
        // compaction), usable in process; `jlog serve` puts HTTP in front of it.
        .target(name: "JournalService", dependencies: [
            "JournalSync", "JournalSyncWire", "JournalLog", "JournalQuery", "ListModel",
            .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["Server"])),
            // RSA signatures of identity providers' tokens (RS256, IdentityToken).
            .product(name: "_CryptoExtras", package: "swift-crypto", condition: .when(traits: ["Server"])),
            .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: ["Server"])),
        ]),
        // Layer 4, transports: `jlog serve`'s HTTP server (Hummingbird) over the reference service,
        // with accounts and access control; and the engine's HTTP client (AsyncHTTPClient).
        .target(name: "JournalServer", dependencies: [
            "JournalService", "JournalSync", "JournalSyncWire", "JournalQuery", "JournalLog",
            .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Server"])),
            .product(name: "HummingbirdCore", package: "hummingbird", condition: .when(traits: ["Server"])),
            .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["Server"])),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Server"])),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: .when(traits: ["Server"])),
            .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
            .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Server"])),
            .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Server"])),
            .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Server"])),
            .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Server"])),
        ]),
        // The HTTP client over a transport of the app's: URLSession by default (Foundation only,
        // so an app builds neither SwiftNIO nor BoringSSL).
        .target(name: "JournalSyncHTTP", dependencies: ["JournalSync", "JournalSyncWire", "JournalLog"]),
        // Sealed lists: epoch keys, sealing and opening texts (Spec/SEALING.md). CryptoKit on Apple
        // platforms (an app builds no BoringSSL); swift-crypto elsewhere, through `Sealing`.
        .target(name: "JournalSeal", dependencies: [
            "JournalCodec",
            // SealedListKeys: the engine's sealing for changes refused for their epoch.
            "JournalSync",
            .product(name: "Crypto", package: "swift-crypto", condition: .when(platforms: [.linux, .android, .windows, .wasi], traits: ["Sealing"])),
        ]),
        // The app's one import: re-exports the modules an app uses (no server, no SwiftNIO).
        .target(name: "JournalKit", dependencies: ["JournalCodec", "JournalLog", "ListModel", "JournalQuery", "JournalSync", "JournalSyncWire", "JournalSyncHTTP"]),
        // The client's AsyncHTTPClient transport, for servers, tools and load tests.
        .target(name: "JournalSyncHTTPNIO", dependencies: [
            "JournalSyncHTTP",
            .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Server"])),
            .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
            .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Server"])),
        ]),
        // Layer 4: the sync service's storage over PostgreSQL (schema migrations, positions that
        // no reader can see out of order, entries as their stored encodings): what nodes over one
        // shared database use instead of the engine's own store. Server-side only.
        .target(name: "JournalPostgres", dependencies: [
            "JournalLog",
            "JournalQuery",
            "JournalService",
            "JournalSync",
            "JournalSyncWire",
            "ListModel",
            .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Server"])),
            .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Server"])),
            .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
            .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: ["Server"])),
        ]),
        // The project's test rigs (an in-memory file system that loses unsynced bytes, a service
        // that injects faults, the fuzz targets' checks): for tests, fuzzers and the simulation,
        // never linked by a library an app uses.
        .target(name: "JournalTesting", dependencies: ["JournalLog", "ListModel", "JournalSync", "JournalSyncWire"]),
        // The seeded multi-device simulation (`jlog simulate`, the sync tests).
        .target(name: "JournalSimulation", dependencies: ["JournalService", "JournalSync", "JournalQuery", "ListModel", "JournalLog", "JournalTesting"]),
        // Outermost: the operator's CLI.
        .executableTarget(
            name: "jlog",
            dependencies: [
                "JournalLog",
                "JournalQuery",
                "JournalSync",
                "JournalService",
                "JournalSimulation",
                "JournalSeal",
                "JournalServer",
                "JournalSyncHTTP",
                "JournalSyncHTTPNIO",
                "JournalSyncWire",
                "JournalPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["Server"])),
            ]
        ),
        .executableTarget(name: "jlog-bench", dependencies: ["JournalLog", "JournalQuery", "ListModel", "JournalSync", "JournalSyncWire", "JournalService", "CSQLite", "JournalSeal",
                                                            "JournalPostgres", .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"]))]),
        // The server's load test: devices over loopback against `jlog serve`, beside Hummingbird's ceiling.
        .executableTarget(name: "jlog-load", dependencies: [
            "JournalLog", "JournalSync", "JournalSyncWire", "JournalService", "JournalSyncHTTP", "JournalSyncHTTPNIO", "JournalPostgres",
            .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Server"])),
            .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
            .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
        ]),
        // An app-shaped example: an @Observable model over one ShoppingList, syncing through
        // `jlog serve` (examples/ShoppingApp; CI builds and runs it, and builds it copied out of
        // the repository as an app would, scripts/app-client-check.sh).
        .executableTarget(name: "shopping-app", dependencies: ["JournalKit"],
                          path: "examples/ShoppingApp"),
        // The README's sync example in Swift (examples/SyncTwoDevices; scripts/sync-example.sh runs it).
        .executableTarget(name: "sync-two-devices", dependencies: ["JournalLog", "JournalQuery", "JournalService", "JournalSync", "ListModel"],
                          path: "examples/SyncTwoDevices"),
        // libFuzzer targets (Fuzz/run-all builds them with -sanitize=fuzzer,address).
        .executableTarget(name: "FuzzEntry", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzEntry"),
        .executableTarget(name: "FuzzBatch", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzBatch"),
        .executableTarget(name: "FuzzSegmentHeader", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzSegmentHeader"),
        .executableTarget(name: "FuzzSegment", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzSegment"),
        .executableTarget(name: "FuzzJSONLine", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzJSONLine"),
        .executableTarget(name: "FuzzChangeToken", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzChangeToken"),
        .executableTarget(name: "FuzzZoneIndex", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzZoneIndex"),
        .executableTarget(name: "FuzzSnapshot", dependencies: ["ListModel", "JournalTesting"], path: "Fuzz/FuzzSnapshot"),
        .executableTarget(name: "FuzzHistory", dependencies: ["ListModel", "JournalTesting"], path: "Fuzz/FuzzHistory"),
        .executableTarget(name: "FuzzConsumer", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzConsumer"),
        .executableTarget(name: "FuzzWireBatch", dependencies: ["JournalLog", "JournalTesting"], path: "Fuzz/FuzzWireBatch"),
        .executableTarget(name: "FuzzAccounts", dependencies: ["JournalSyncWire", "JournalTesting"], path: "Fuzz/FuzzAccounts"),
        .executableTarget(name: "FuzzHTTPText", dependencies: ["JournalSyncWire", "JournalTesting"], path: "Fuzz/FuzzHTTPText"),
        .executableTarget(name: "FuzzSyncState", dependencies: ["JournalSync", "JournalTesting"], path: "Fuzz/FuzzSyncState"),
        .executableTarget(name: "FuzzIdentityToken", dependencies: ["JournalService"], path: "Fuzz/FuzzIdentityToken"),
        .executableTarget(name: "FuzzSealed", dependencies: ["JournalSeal"], path: "Fuzz/FuzzSealed"),
        .testTarget(
            name: "JournalLogTests",
            dependencies: ["JournalLog", "JournalTesting", .product(name: "PropertyBased", package: "swift-property-based", condition: .when(traits: ["Server"]))],
            resources: []
        ),
        .testTarget(name: "JournalSealTests", dependencies: ["JournalSeal", "JournalCodec", "JournalSync"]),
        .testTarget(
            name: "JournalQueryTests",
            dependencies: ["JournalQuery", "JournalTesting", .product(name: "PropertyBased", package: "swift-property-based", condition: .when(traits: ["Server"]))]
        ),
        .testTarget(
            name: "JournalSyncTests",
            dependencies: ["JournalSync", "JournalSyncWire", "JournalService", "JournalSimulation", "JournalTesting", "JournalQuery", "ListModel", "JournalPostgres",
                           // Sealed lists end to end (SealedListTests): keys, sealing, opening.
                           "JournalSeal"]
        ),
        .testTarget(
            name: "JournalServerTests",
            dependencies: ["JournalServer", "JournalTesting", "JournalSeal", "JournalSyncHTTP", "JournalSyncHTTPNIO", "JournalSyncWire", "JournalService", "JournalSync", "JournalQuery", "ListModel",
                           .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Server"])),
                           // Identity providers' keys, to sign the tokens the enrolment tests present.
                           .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["Server"])),
                           .product(name: "_CryptoExtras", package: "swift-crypto", condition: .when(traits: ["Server"]))]
        ),
        .testTarget(
            name: "JournalPostgresTests",
            dependencies: ["JournalPostgres", "JournalLog", "JournalSyncWire", "JournalService", "JournalSync", .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Server"])),
                           .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Server"]))]
        ),
        .testTarget(
            name: "ListModelTests",
            // JournalQuery for its helper threads (`HelperThreads`), which the reducer tests use.
            dependencies: ["ListModel", "JournalQuery", "JournalTesting", .product(name: "PropertyBased", package: "swift-property-based", condition: .when(traits: ["Server"]))]
        ),
    ],
    swiftLanguageModes: [.v6]
)
