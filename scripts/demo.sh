#!/usr/bin/env bash
# The main job: builds jlog, imports a real shopping list journal into a fresh store, then
# inspects, verifies and dumps it, shows that a dump re-imports to the same entries, pages the
# change feed, shows the list and its history, and compacts it; then two family members share a
# list through `jlog serve` on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# A debug build: the test command builds the same, and a release build of the server's
# dependencies (SwiftNIO, Hummingbird, BoringSSL) takes over 20 minutes on two cores.
swift build --product jlog
swift build --product shopping-app
JLOG="$(pwd)/.build/debug/jlog"
APP="$(pwd)/.build/debug/shopping-app"
work="$(mktemp -d)"
server_pid=""
# The server is stopped and waited for before its store is removed: stopping, it still writes.
trap '[ -n "$server_pid" ] && { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }; rm -rf "$work"' EXIT
store="$work/list.wal"

# Small segments (512 bytes, batches of 4) so the 26 entries fill several: the compaction step at
# the end rewrites sealed segments only, never the one being appended to.
echo "== jlog import $store examples/weekly-shop.jsonl --sync --segment-size 512 --batch-size 4"
"$JLOG" import "$store" examples/weekly-shop.jsonl --sync --segment-size 512 --batch-size 4
echo
echo "== jlog inspect $store"
"$JLOG" inspect "$store"
echo
echo "== jlog verify $store"
"$JLOG" verify "$store"
echo
echo "== jlog dump $store"
"$JLOG" dump "$store"
echo
echo "== jlog dump --json, shuffled, re-imported into a second store: same entries?"
"$JLOG" dump --json "$store" > "$work/dump.jsonl"
shuf "$work/dump.jsonl" | "$JLOG" import "$work/copy.wal" -
if diff <(sort "$work/dump.jsonl") <("$JLOG" dump --json "$work/copy.wal" | sort) >/dev/null; then
  echo "yes: the re-imported store holds the same $(wc -l < "$work/dump.jsonl") entries"
else
  echo "no: the entries differ" >&2
  exit 1
fi
echo
W=List-db6a6e29-weekly
echo "== jlog zones $store: each list lives in its own zone"
"$JLOG" zones "$store"
echo
echo "== jlog changes --zone $W --limit 5 --json: the first page and a change token"
"$JLOG" changes "$store" --zone "$W" --limit 5 --json > "$work/page1.json"
cat "$work/page1.json"; echo
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$work/page1.json")
echo "== the same import again: every id is already stored, so nothing is added (idempotent append)"
"$JLOG" import "$store" examples/weekly-shop.jsonl --sync | tail -n 1
echo "== one more entry, then jlog changes --since <token>: pages continue exactly where the token left off"
echo '{"id":"e-demo-1","zone":"List-db6a6e29-weekly","op":"add","item":"lemons","text":"Lemons","after":"apples","by":"bob","at":"2026-11-22T17:00:00Z"}' \
  | "$JLOG" import "$store" - --sync
"$JLOG" changes "$store" --zone "$W" --since "$token" --limit 100 --json | python3 -c '
import json,sys; d=json.load(sys.stdin)
print("entries after the token:", len(d["entries"]), "sequences", [e["seq"] for e in d["entries"]], "moreComing:", d["moreComing"])'
echo
echo "== jlog show --zone $W: the list as every replica computes it"
"$JLOG" show "$store" --zone "$W"
echo
echo "== jlog history: when did we last buy coffee? who deleted the bread?"
"$JLOG" history "$store" --zone "$W" --text coffee --kind markedOff
"$JLOG" history "$store" --zone "$W" --text bread --kind deleted
echo
echo "== jlog snapshot, then show reads the snapshot plus the entries after it"
"$JLOG" snapshot "$store"
"$JLOG" show "$store" --zone "$W" --json | python3 -c '
import json,sys; d=json.load(sys.stdin)
print(d["name"], "/", d["colour"], "/", ", ".join(i["text"] + (" ✓" if i["state"] == "markedOff" else "") for i in d["items"]))'
echo
echo "== jlog delete-zone: the party list goes atomically; an old token now gets zoneDeleted (exit 6)"
ptoken=$("$JLOG" changes "$store" --zone List-5c1f0a77-party --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
"$JLOG" delete-zone "$store" List-5c1f0a77-party
set +e
"$JLOG" changes "$store" --zone List-5c1f0a77-party --since "$ptoken" --json
status=$?
set -e
[ "$status" -eq 6 ] || { echo "expected exit 6 (zoneDeleted), got $status" >&2; exit 1; }
echo
echo "== jlog inspect $store (now with snapshots)"
"$JLOG" inspect "$store"
echo
echo "== compaction, as if run on 2026-12-31 (the demo's entries are from 2026-11-20 to 22, so older than"
echo "   the 14-day retention): first a consumer, the upload queue, that has processed the list through 12"
NOW=2026-12-31T00:00:00Z
"$JLOG" consumers "$store" --register uploaded
"$JLOG" consumers "$store" --advance uploaded --zone "$W" --to 12
"$JLOG" compact "$store" --now "$NOW" --dry-run
echo "-- it uploads the rest, then the list and the porridge oats' history before compacting"
last=$("$JLOG" zones --json "$store" | python3 -c 'import json,sys; print([z for z in json.load(sys.stdin)["zones"] if z["name"] == sys.argv[1]][0]["lastChange"])' "$W")
"$JLOG" consumers "$store" --advance uploaded --zone "$W" --to "$last"
"$JLOG" show "$store" --zone "$W"
"$JLOG" history "$store" --zone "$W" --text oats
echo "== jlog compact $store --now $NOW"
"$JLOG" compact "$store" --now "$NOW"
echo "-- after: the porridge oats (marked off, nothing added after them) are gone from the list, still in the history"
"$JLOG" show "$store" --zone "$W"
"$JLOG" history "$store" --zone "$W" --text oats
"$JLOG" show "$store" --zone "$W" --json | python3 -c '
import json,sys; d=json.load(sys.stdin)
assert "Porridge oats" not in [i["text"] for i in d["items"]], "compaction should have purged the porridge oats"'
[ "$("$JLOG" history "$store" --zone "$W" --text oats --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["events"]))')" -eq 2 ] \
  || { echo "the history should still hold the porridge oats' add and mark-off" >&2; exit 1; }
echo "-- the first page's token is now below the low-water mark: tokenExpired (exit 5), re-fetch from the snapshot"
set +e
"$JLOG" changes "$store" --zone "$W" --since "$token" --json
status=$?
set -e
[ "$status" -eq 5 ] || { echo "expected exit 5 (tokenExpired), got $status" >&2; exit 1; }
echo "== jlog inspect $store (compacted segments, the consumer) and jlog verify"
"$JLOG" inspect "$store"
"$JLOG" verify "$store"
echo
echo "== a damaged disk: append one more entry, then zero the last 7 bytes of its record. The store was"
echo "   closed cleanly, so this is no torn write: an acknowledged entry is lost, and nothing may reuse its"
echo "   sequence (an old change token would skip whatever took it). verify says so; a writer refuses"
echo '{"zone":"List-db6a6e29-weekly","op":"add","item":"tea","text":"Tea bags","after":"eggs","by":"alice","at":"2026-11-22T18:00:00Z"}' \
  | "$JLOG" import "$store" - --sync
tea_token=$("$JLOG" changes "$store" --zone "$W" --json --limit 100000 | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
seg="$(ls "$store"/*.seg | tail -n 1)"
end=$("$JLOG" inspect --json "$store" | python3 -c 'import json,sys; print(json.load(sys.stdin)["segments"][-1]["bytes"])')
dd if=/dev/zero of="$seg" bs=1 seek=$((end - 7)) count=7 conv=notrunc status=none
if "$JLOG" verify "$store"; then echo "verify should have reported the lost entry" >&2; exit 1; fi
set +e
echo '{"zone":"List-db6a6e29-weekly","op":"add","item":"filters","text":"Coffee filters","after":"coffee","by":"bob","at":"2026-11-22T18:05:00Z"}' \
  | "$JLOG" import "$store" - --sync
status=$?
set -e
[ "$status" -eq 2 ] || { echo "expected the writer to refuse (exit 2), got $status" >&2; exit 1; }
echo "== the operator accepts the loss: recovery cuts the damaged record (its bytes go to torn/) and begins"
echo "   a new token epoch, so the token taken before the damage is refused instead of skipping entries"
"$JLOG" recover "$store" --accept-loss
echo '{"zone":"List-db6a6e29-weekly","op":"add","item":"filters","text":"Coffee filters","after":"coffee","by":"bob","at":"2026-11-22T18:05:00Z"}' \
  | "$JLOG" import "$store" - --sync
set +e
"$JLOG" changes "$store" --zone "$W" --since "$tea_token" --json
status=$?
set -e
[ "$status" -eq 4 ] || { echo "expected invalidToken (exit 4) for the token past the lost entry, got $status" >&2; exit 1; }
"$JLOG" verify "$store"
echo "bytes set aside by recovery:"
ls -l "$store/torn"
echo
echo "== syncing: a server on loopback, two accounts, a shared list (README, \"Syncing\")"
cd "$work"
"$JLOG" accounts add server.wal alice --output alice.cred
"$JLOG" accounts add server.wal bob --output bob.cred
"$JLOG" serve server.wal --listen 127.0.0.1:0 --port-file port 2>server.log &
server_pid=$!
for _ in $(seq 1 100); do [ -s port ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat port)"
echo "-- alice's phone makes a list and adds to it offline, then syncs"
"$JLOG" sync alice.wal --server "$url" --credential alice.cred --device phone
"$JLOG" create-list alice.wal weekly
"$JLOG" add alice.wal --zone weekly Milk
"$JLOG" add alice.wal --zone weekly "Coffee beans" --after Milk
"$JLOG" sync alice.wal --server "$url" --credential alice.cred
echo "-- she shares it with bob; his laptop accepts, syncs, and marks the milk off"
"$JLOG" sync bob.wal --server "$url" --credential bob.cred --device laptop
invitation=$("$JLOG" share alice.wal --zone weekly --with bob --server "$url" --credential alice.cred)
"$JLOG" accept bob.wal "$invitation" --server "$url" --credential bob.cred
"$JLOG" sync bob.wal --server "$url" --credential bob.cred
"$JLOG" mark-off bob.wal --zone alice/weekly Milk
"$JLOG" sync bob.wal --server "$url" --credential bob.cred
echo "-- alice syncs: the same list on both devices, and in the history who joined and who bought what"
"$JLOG" sync alice.wal --server "$url" --credential alice.cred
"$JLOG" show alice.wal --zone alice/weekly
"$JLOG" history alice.wal --zone alice/weekly
python3 - "$JLOG" <<'PY'
import json, subprocess, sys
def state(store):
    d = json.loads(subprocess.check_output([sys.argv[1], "show", store, "--zone", "alice/weekly", "--json"]))
    return {k: v for k, v in d.items() if k not in ("incarnation", "sequence")}
assert state("alice.wal") == state("bob.wal"), "the two devices should show the same list"
print("both devices show the same list")
PY
"$JLOG" sync-status bob.wal
echo "-- alice's app (examples/ShoppingApp: an @Observable model over ListStore.observe, edits through the"
echo "   sync engine on the store's own thread) adds to a list of its own and syncs through the same server"
"$APP" alice-app.wal --server "$url" --credential "$(tr -d '\n' < alice.cred)"
"$JLOG" sync alice.wal --server "$url" --credential alice.cred
"$JLOG" show alice.wal --zone alice/Weekly
