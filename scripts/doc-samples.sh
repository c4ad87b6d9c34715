#!/usr/bin/env bash
# Compiles every Swift sample of the README and of the DocC catalog as an app would: an external
# package that depends on this one by path. A sample that continues an earlier one (the README's
# reader after its embedding example) is compiled with it; a fragment gets the imports and the
# few names it assumes declared before it. Compiled, not run (the
# samples write files in the working directory). CI runs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$root" "$work" <<'PY'
import os, re, sys
root, work = sys.argv[1], sys.argv[2]
docc = os.path.join(root, "Sources/JournalQuery/JournalQuery.docc")

def blocks(path):
    found = re.findall(r"```swift\n(.*?)```", open(path).read(), re.S)
    # Package.swift fragments are not Swift a target compiles.
    return [b for b in found if not re.search(r"^\s*\.(package|product)\(", b, re.M)]

imports = "import Foundation\nimport JournalLog\nimport JournalQuery\nimport JournalSync\nimport ListModel\n"
readme = blocks(os.path.join(root, "README.md"))
samples = {
    # The embedding example, then the reader and change stream that continue it.
    "ReadmeEmbedding": readme[0] + readme[1],
    "ReadmeSync": readme[2],
    # Hints: the app's engine and its HTTP service, then the README's lines.
    "ReadmeHints": imports + "import JournalSyncHTTP\nimport JournalSyncWire\n"
        + "let service = HTTPSyncService(server: \"http://127.0.0.1:8080\", credential: DeviceCredential.issue(for: \"alice\"))\n"
        + "let engine = try SyncEngine(store: JournalStore.open(\"alice.wal\"), service: service, replica: \"alice:phone\")\n"
        + "let weekly = try await engine.createList(\"weekly\")\n" + readme[3],
    # "For an app": a whole program, as scripts/app-client-check.sh runs it.
    "ReadmeApp": readme[4],
    "GettingStarted": blocks(os.path.join(docc, "GettingStarted.md"))[0],
    "ObservingLists": imports + "import Observation\nfunc show(_ state: ListState) {}\n"
        + "".join(blocks(os.path.join(docc, "ObservingLists.md"))),
    # examples/SyncTwoDevices, copied out of the repository (it runs the service in process).
    "SyncTwoDevices": open(os.path.join(root, "examples/SyncTwoDevices/main.swift")).read(),
    "SyncModule": blocks(os.path.join(root, "Sources/JournalSync/JournalSync.docc/JournalSync.md"))[0],
    "InTheShop": blocks(os.path.join(root, "Sources/JournalSync/JournalSync.docc/InTheShop.md"))[0],
    "BackgroundAndSupport": blocks(os.path.join(root, "Sources/JournalSync/JournalSync.docc/BackgroundAndSupport.md"))[0],
    "HTTPModule": blocks(os.path.join(root, "Sources/JournalSyncHTTP/JournalSyncHTTP.docc/JournalSyncHTTP.md"))[0],
    "SyncingDevices": imports + "import JournalSyncHTTP\nimport JournalSyncWire\n"
        + "let lists = try await ListStore.open(\"shopping.wal\")\n"
        + "let service = HTTPSyncService(server: \"http://127.0.0.1:8080\", credential: DeviceCredential.issue(for: \"alice\"))\n"
        + "".join(blocks(os.path.join(docc, "SyncingDevices.md"))),
}
products = ["JournalKit", "JournalLog", "JournalQuery", "ListModel", "JournalSync", "JournalSyncWire", "JournalSyncHTTP", "JournalService"]
name = os.path.basename(root)
deps = ", ".join(f'.product(name: "{p}", package: "{name}")' for p in products)
targets = []
for target, code in samples.items():
    os.makedirs(os.path.join(work, "Sources", target))
    open(os.path.join(work, "Sources", target, "main.swift"), "w").write(code)
    targets.append(f'        .executableTarget(name: "{target}", dependencies: [{deps}]),')
open(os.path.join(work, "Package.swift"), "w").write(f"""// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "DocSamples",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(path: "{root}")],
    targets: [
{chr(10).join(targets)}
    ],
    swiftLanguageModes: [.v6]
)
""")
print(f"{len(samples)} samples from README.md and the DocC catalog")
PY
cd "$work"
start=$(date +%s)
if ! swift build > build.log 2>&1; then
    grep -E "error:" -A3 build.log | head -60
    echo "doc samples: a sample does not compile" >&2
    exit 1
fi
echo "doc samples: compiled in $(( $(date +%s) - start )) s"
