#!/usr/bin/env bash
# The app's side, as an app builds it (issue 36): an external package that depends on this one
# for the engine, the list queries, the sync engine and the URLSession HTTP client, and whose
# code is the DocC "Getting started" sample plus an observation and a client. It must build
# neither SwiftNIO nor BoringSSL, and run. Prints its first build's time. CI runs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/Sources/App"
cat > "$work/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "AppSide",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(path: "$root")],
    targets: [
        .executableTarget(name: "App", dependencies: [
            .product(name: "JournalLog", package: "main"), .product(name: "JournalQuery", package: "main"),
            .product(name: "ListModel", package: "main"), .product(name: "JournalSync", package: "main"),
            .product(name: "JournalSyncWire", package: "main"), .product(name: "JournalSyncHTTP", package: "main"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
SWIFT
# The package's directory is named main in CI's clone too? SwiftPM names a path dependency by its
# directory: use whatever the checkout is called.
sed -i "s/package: \"main\"/package: \"$(basename "$root")\"/g" "$work/Package.swift"
cat > "$work/Sources/App/main.swift" <<'SWIFT'
import Foundation
import JournalLog
import JournalQuery
import JournalSync
import JournalSyncHTTP
import JournalSyncWire
import ListModel

// DocC, "Getting started".
let path = FileManager.default.temporaryDirectory.path + "/app-side-\(UUID().uuidString).wal"
defer { try? FileManager.default.removeItem(atPath: path) }
let lists = try await ListStore.open(path)
var clock = HybridClock()
let now = Int64(Date().timeIntervalSince1970 * 1000)
let milk = CompactID.random()
try await lists.append(JournalEntry(id: .random(), zone: "weekly", author: "alice", wallTime: now,
                                    clock: clock.tick(wallMillis: now),
                                    operation: .add(item: milk, text: "Milk", after: nil)))
let list = try await lists.materialise("weekly").state
print(list.items.map(\.text))
// DocC, "Observing lists": the first state of an observation.
for try await state in lists.observe("weekly") {
    guard state.items.count == 1 else { fatalError("the observed state is not the list") }
    break
}
// The client an app syncs with (URLSession): made, not called.
let service = HTTPSyncService(server: "http://127.0.0.1:1", credential: DeviceCredential.issue(for: "alice"))
_ = try SyncEngine(store: lists.store, service: service, replica: "alice:phone")
try await lists.close()
print("the app side builds and runs")
SWIFT
cd "$work"
start=$(date +%s)
swift build 2>&1 | tee build.log | grep -E "error|warning: .*App/" || true
grep -q "Build complete" build.log || { echo "app-client-check: the app side did not build" >&2; tail -20 build.log >&2; exit 1; }
echo "app-client-check: first build of the app side took $(( $(date +%s) - start )) s"
if grep -E "Compiling (NIO|CNIO|AsyncHTTPClient|CCryptoBoringSSL|Crypto |NIOSSL)" build.log; then
    echo "app-client-check: the app side built SwiftNIO or BoringSSL" >&2; exit 1
fi
"$(swift build --show-bin-path)/App"
