// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "JournalLog",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "JournalLog", targets: ["JournalLog"]),
        .library(name: "ListModel", targets: ["ListModel"]),
        .library(name: "JournalQuery", targets: ["JournalQuery"]),
        .library(name: "JournalSync", targets: ["JournalSync"]),
        .library(name: "JournalService", targets: ["JournalService"]),
        .executable(name: "jlog", targets: ["jlog"]),
        .executable(name: "jlog-bench", targets: ["jlog-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
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
        // Pure like the codec; it plugs into the log, which knows nothing about lists.
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
        .target(name: "JournalSync", dependencies: ["JournalLog", "JournalQuery", "ListModel"]),
        // Layer 4: the reference sync service over a JournalStore (accounts' databases, sharing,
        // compaction), usable in process; `jlog serve` puts HTTP in front of it.
        .target(name: "JournalService", dependencies: ["JournalSync", "JournalLog", "JournalQuery", "ListModel"]),
        // The seeded multi-device simulation (`jlog simulate`, the sync tests).
        .target(name: "JournalSimulation", dependencies: ["JournalService", "JournalSync", "JournalQuery", "ListModel", "JournalLog"]),
        // Outermost: the operator's CLI.
        .executableTarget(
            name: "jlog",
            dependencies: [
                "JournalLog",
                "JournalQuery",
                "JournalSync",
                "JournalService",
                "JournalSimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "jlog-bench", dependencies: ["JournalLog", "JournalQuery", "ListModel", "CSQLite"]),
        // libFuzzer targets (Fuzz/run-all builds them with -sanitize=fuzzer,address).
        .executableTarget(name: "FuzzEntry", dependencies: ["JournalLog"], path: "Fuzz/FuzzEntry"),
        .executableTarget(name: "FuzzBatch", dependencies: ["JournalLog"], path: "Fuzz/FuzzBatch"),
        .executableTarget(name: "FuzzSegmentHeader", dependencies: ["JournalLog"], path: "Fuzz/FuzzSegmentHeader"),
        .executableTarget(name: "FuzzSegment", dependencies: ["JournalLog"], path: "Fuzz/FuzzSegment"),
        .executableTarget(name: "FuzzJSONLine", dependencies: ["JournalLog"], path: "Fuzz/FuzzJSONLine"),
        .executableTarget(name: "FuzzChangeToken", dependencies: ["JournalLog"], path: "Fuzz/FuzzChangeToken"),
        .executableTarget(name: "FuzzZoneIndex", dependencies: ["JournalLog"], path: "Fuzz/FuzzZoneIndex"),
        .executableTarget(name: "FuzzSnapshot", dependencies: ["ListModel"], path: "Fuzz/FuzzSnapshot"),
        .executableTarget(name: "FuzzHistory", dependencies: ["ListModel"], path: "Fuzz/FuzzHistory"),
        .executableTarget(name: "FuzzConsumer", dependencies: ["JournalLog"], path: "Fuzz/FuzzConsumer"),
        .testTarget(
            name: "JournalLogTests",
            dependencies: ["JournalLog", .product(name: "PropertyBased", package: "swift-property-based")],
            resources: []
        ),
        .testTarget(
            name: "JournalQueryTests",
            dependencies: ["JournalQuery", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "JournalSyncTests",
            dependencies: ["JournalSync", "JournalService", "JournalSimulation", "JournalQuery", "ListModel"]
        ),
        .testTarget(
            name: "ListModelTests",
            dependencies: ["ListModel", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
