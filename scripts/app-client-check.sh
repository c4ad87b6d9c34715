#!/usr/bin/env bash
# The app's side, as an app builds it: an external package that depends on this one for its one
# app product (JournalKit) with `traits: []`, so none of the server's packages are resolved, and
# whose code is the README's "For an app" program. It must build neither SwiftNIO nor BoringSSL,
# resolve no server package, build with no warning from this package, and run. Prints the
# packages it resolved, their size on disk and its first build's time. CI runs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/Sources/App" "$work/Sources/ShoppingApp"
# examples/ShoppingApp, copied out of the repository: it must build as an app's code.
cp "$root/examples/ShoppingApp/main.swift" "$work/Sources/ShoppingApp/main.swift"
# SwiftPM names a path dependency by its directory unless `name:` is given: the product's
# `package:` label is that name.
name="$(basename "$root")"
cat > "$work/Package.swift" <<SWIFT
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "AppSide",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(path: "$root", traits: [])],
    targets: [
        .executableTarget(name: "App", dependencies: [.product(name: "JournalKit", package: "$name")]),
        .executableTarget(name: "ShoppingApp", dependencies: [.product(name: "JournalKit", package: "$name")]),
    ],
    swiftLanguageModes: [.v6]
)
SWIFT
# The README's "For an app", whole.
cat > "$work/Sources/App/main.swift" <<'SWIFT'
import Foundation
import JournalKit

let path = FileManager.default.temporaryDirectory.path + "/app-side-\(UUID().uuidString).wal"
defer { try? FileManager.default.removeItem(atPath: path) }
let lists = try await ListStore.open(path)
// Not signed in yet: lists are this device's until `signIn` gives the engine its service.
let engine = try await SyncEngine.open(store: lists.store, service: OfflineService(account: "alice"), replica: "alice:phone")
let weekly = try await engine.createList(named: "Weekly")
let milk = try await weekly.add("Milk")
try await weekly.add("Bread", after: milk)
try await weekly.markOff(milk)
do {
    try await weekly.add("")
} catch {
    print("refused: \(error)")
}
for try await state in weekly.observe() {
    print(state.items.map { "\($0.text)\($0.state == .markedOff ? " (bought)" : "")" })
    break
}
let report = await engine.sync()
print(report.offline ? "offline: \(report.errors)" : "synced")
// The client an app syncs with once signed in (URLSession): made, not called.
_ = HTTPSyncService(server: "http://127.0.0.1:1", credential: DeviceCredential.issue(for: "alice"))
try await lists.close()
print("the app side builds and runs")
SWIFT
cd "$work"
swift package resolve > resolve.log 2>&1 || { cat resolve.log >&2; exit 1; }
packages=$(ls .build/checkouts 2>/dev/null | tr '\n' ' ')
count=$(ls .build/checkouts 2>/dev/null | wc -l)
size=$(du -sm .build/checkouts .build/repositories 2>/dev/null | awk '{s += $1} END {print s + 0}')
echo "app-client-check: the app resolves $count packages ($size MB of checkouts and clones): $packages"
if ls .build/checkouts 2>/dev/null | grep -E -i "nio|hummingbird|postgres|crypto|boringssl"; then
    echo "app-client-check: the app resolved a server package" >&2; exit 1
fi
start=$(date +%s)
swift build 2>&1 | tee build.log | grep -E "error|warning: " || true
grep -q "Build complete" build.log || { echo "app-client-check: the app side did not build" >&2; tail -20 build.log >&2; exit 1; }
echo "app-client-check: first build of the app side took $(( $(date +%s) - start )) s"
if grep -E "Compiling (NIO|CNIO|AsyncHTTPClient|CCryptoBoringSSL|Crypto |NIOSSL)" build.log; then
    echo "app-client-check: the app side built SwiftNIO or BoringSSL" >&2; exit 1
fi
if grep -E "warning: " build.log | grep -v -E "/Sources/(App|ShoppingApp)/"; then
    echo "app-client-check: this package warns in a dependent's build" >&2; exit 1
fi
"$(swift build --show-bin-path)/App"
"$(swift build --show-bin-path)/ShoppingApp" "$work/shopping.wal"

# An app that also keeps sealed lists (JournalSeal, Spec/SEALING.md). On Apple platforms it imports
# CryptoKit and needs no trait: it resolves nothing more than the app above. On Linux there is no
# CryptoKit: the app enables the `Sealing` trait, which resolves swift-crypto and compiles its
# BoringSSL. What that resolves is printed here (not built: BoringSSL takes minutes).
mkdir -p "$work/seal/Sources/SealApp"
cat > "$work/seal/Package.swift" <<SWIFT
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "SealSide",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(path: "$root", traits: ["Sealing"])],
    targets: [.executableTarget(name: "SealApp", dependencies: [.product(name: "JournalSeal", package: "$name")])],
    swiftLanguageModes: [.v6]
)
SWIFT
echo 'import JournalSeal; print(ListKey.random(epoch: 1).epoch)' > "$work/seal/Sources/SealApp/main.swift"
(cd "$work/seal" && swift package resolve > resolve.log 2>&1) || { cat "$work/seal/resolve.log" >&2; exit 1; }
sealed=$(ls "$work/seal/.build/checkouts" 2>/dev/null | tr '\n' ' ')
if ls "$work/seal/.build/checkouts" | grep -E -i "nio|hummingbird|postgres"; then
    echo "app-client-check: sealed lists resolved a server package" >&2; exit 1
fi
echo "app-client-check: on Linux, sealed lists (JournalSeal, trait Sealing) resolve: $sealed(swift-crypto builds BoringSSL here; on Apple platforms JournalSeal uses CryptoKit and resolves none of them)"

