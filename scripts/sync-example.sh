#!/usr/bin/env bash
# The README's sync example, run as written: two devices (Alice's and Bob's stores) share a list
# through the reference service, here a store directory both open in turn (no network). CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
JLOG="$(pwd)/${JLOG:-.build/debug/jlog}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
j() { echo "\$ jlog $*"; "$JLOG" "$@"; }

j sync alice.wal --service-store family.svc --account alice --device phone
j create-list alice.wal weekly
j add alice.wal --zone weekly Milk
j add alice.wal --zone weekly Bread --after Milk
j sync alice.wal --service-store family.svc
j sync bob.wal --service-store family.svc --account bob --device phone
invitation=$("$JLOG" share alice.wal --zone weekly --with bob --service-store family.svc)
echo "\$ invitation=\$(jlog share alice.wal --zone weekly --with bob --service-store family.svc)"
j accept bob.wal "$invitation" --service-store family.svc
j sync bob.wal --service-store family.svc
j mark-off bob.wal --zone alice/weekly Milk
j sync bob.wal --service-store family.svc
j sync alice.wal --service-store family.svc
j show alice.wal --zone alice/weekly
j history alice.wal --zone alice/weekly
j sync-status bob.wal
same=$(python3 - "$JLOG" <<'PY'
import json, subprocess, sys
def state(store):
    d = json.loads(subprocess.check_output([sys.argv[1], "show", store, "--zone", "alice/weekly", "--json"]))
    return {k: v for k, v in d.items() if k not in ("incarnation", "sequence")}
print("yes" if state("alice.wal") == state("bob.wal") else "no")
PY
)
[ "$same" = yes ] || { echo "the two devices show different lists" >&2; exit 1; }
echo "both devices show the same list"
# The same story in Swift (README, "Syncing in Swift"): examples/SyncTwoDevices.
cd "$OLDPWD"
swift build --product sync-two-devices >/dev/null
"$(swift build --show-bin-path)/sync-two-devices"
