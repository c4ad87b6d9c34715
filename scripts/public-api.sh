#!/usr/bin/env bash
# Counts the public declarations each library module offers, from the compiler's symbol graphs
# (`swift package dump-symbol-graph`, public and open only), and the ones without a doc comment.
# Members the compiler synthesises and witnesses of the standard library's protocols (`==`,
# `description`, `hash(into:)`, ...) are not counted: their documentation is the protocol's.
# Prints one JSON object; the app-facing modules are the ones an app links (the engine, the list
# model, queries, the sync engine, its wire, the URLSession client and sealing).
#   bash scripts/public-api.sh              report
#   bash scripts/public-api.sh --strict     also fail if any public declaration is undocumented
set -euo pipefail
cd "$(dirname "$0")/.."
strict=0
[[ "${1:-}" == "--strict" ]] && strict=1
swift package dump-symbol-graph --minimum-access-level public --skip-synthesized-members >/dev/null
dir="$(swift build --show-bin-path)/../symbolgraph"
python3 - "$dir" "$strict" <<'PY'
import glob, json, os, sys
directory, strict = sys.argv[1], sys.argv[2] == "1"
app = ["JournalCodec", "JournalLog", "ListModel", "JournalQuery", "JournalSync", "JournalSyncWire", "JournalSyncHTTP", "JournalSeal"]
others = ["JournalService", "JournalServer", "JournalPostgres", "JournalSyncHTTPNIO", "JournalSimulation", "JournalTesting"]
witnesses = {"==(_:_:)", "!=(_:_:)", "<(_:_:)", "description", "hash(into:)", "hashValue",
             "makeIterator()", "next()", "makeAsyncIterator()", "unownedExecutor", "init(rawValue:)",
             "rawValue", "errorDescription", "allCases", "id", "enqueue(_:)"}
report, missing = {}, []
for module in app + others:
    symbols = []
    for path in glob.glob(os.path.join(directory, module + ".symbols.json")) + \
                glob.glob(os.path.join(directory, module + "@*.symbols.json")):
        symbols += json.load(open(path))["symbols"]
    public = [s for s in symbols if s.get("accessLevel") in ("public", "open")
              and "::SYNTHESIZED::" not in s["identifier"]["precise"]
              and not (len(s["pathComponents"]) > 1 and s["pathComponents"][-1] in witnesses)]
    undocumented = [".".join(s["pathComponents"]) for s in public if not s.get("docComment")]
    report[module] = {"public": len(public), "undocumented": len(undocumented)}
    missing += [f"{module}: {name}" for name in sorted(undocumented)]
total = sum(report[m]["public"] for m in app)
undocumented = sum(report[m]["undocumented"] for m in app)
print(json.dumps({"appFacing": {"public": total, "undocumented": undocumented}, "modules": report}, indent=1))
if missing:
    print("\n".join(missing), file=sys.stderr)
    if strict:
        sys.exit(f"{len(missing)} public declarations have no doc comment")
PY
