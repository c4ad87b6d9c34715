#!/usr/bin/env bash
# Two `jlog serve --database` nodes over one PostgreSQL (a private cluster, scripts/postgres.sh),
# behind nginx (round robin; a request a dead node refused goes to the other), on loopback. Three
# device processes (alice, bob and carol, each its own store) edit one shared list and sync at
# random through nginx while one node or the other is killed with SIGKILL and restarted, ROUNDS
# times (default 10); both nodes compact every 2 s with no retention. Then every device syncs
# until quiet and the script checks: every device shows the same list; every change a device
# acknowledged (`jlog add` etc. printed its id) is in the service's history (read through alice's
# device); no entry id is stored twice on any device; the database holds each id once per zone;
# `jlog verify` passes on every device's store; the last node's metrics show the database's
# series (database calls, requests, fetches, entries saved);
# once it stops, `jlog accounts devices --database` lists each device's catch-up.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-10}"
OPS="${OPS:-25}"
[ -x "${JLOG:-.build/debug/jlog}" ] || swift build --product jlog >/dev/null
JLOG="$(pwd)/${JLOG:-.build/debug/jlog}"
PSQL="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql"
scripts="$(pwd)/scripts"
work="$(mktemp -d /tmp/jlog-nodes.XXXXXX)"
chmod 755 "$work"
pids=("" "")
devices=()
. "$scripts/jlog-nodes.sh"
trap cleanup_nodes EXIT
cd "$work"
start_database
ports=("$(free_port)" "$(free_port)")
front="$(free_port)"
node_flags=(--retention-days 0 --compact-every 2 --rate-limit 0)
start_node 0
start_node 1
start_front "$work/nginx" "$front"
url="http://127.0.0.1:$front"
. "$scripts/shared-list-devices.sh"
for p in alice bob carol; do device "$p" & devices+=($!); done

# One node or the other dies (SIGKILL) and comes back at random moments while the devices work.
kills=0
while [ $kills -lt "$ROUNDS" ]; do
  if [ $((RANDOM % 3)) -eq 0 ]; then sleep "2.$((RANDOM % 9))"; else sleep "0.$((RANDOM % 8 + 2))"; fi
  k=$((RANDOM % 2))
  kill -9 "${pids[$k]}" 2>/dev/null || true
  wait "${pids[$k]}" 2>/dev/null || true
  kills=$((kills + 1))
  sleep "0.$((RANDOM % 4))"
  start_node "$k"
done
for p in "${devices[@]}"; do wait "$p" || true; done
devices=()

# Compaction stops before the quiet phase (with no retention it would race the check): both
# nodes are killed and one comes back without it.
for k in 0 1; do kill -9 "${pids[$k]}" 2>/dev/null || true; wait "${pids[$k]}" 2>/dev/null || true; pids[$k]=""; done
kills=$((kills + 2))
mport="$(free_port)"
"$JLOG" serve --database "$db" --listen "127.0.0.1:${ports[0]}" --compact-every 0 --rate-limit 0 --metrics "127.0.0.1:$mport" >>node0.log 2>&1 &
pids[0]=$!
disown "${pids[0]}" 2>/dev/null || true
for _ in $(seq 1 200); do curl -sf "http://127.0.0.1:${ports[0]}/v1/health" >/dev/null 2>&1 && break; sleep 0.05; done

# One more change each, so that every device uploads and fetches through this node (which notes
# where each caught up, for `jlog accounts devices` below).
for p in alice bob carol; do
  out=$("$JLOG" add "$p.wal" --zone "$zone" "$p quiet item") && echo "$out" | sed -n 's/.* as \([^;]*\);.*/\1/p' >> "$p.acked"
done
for _ in 1 2 3 4; do for p in alice bob carol; do sync_once "$p" phone || true; done; done
curl -sf "http://127.0.0.1:$mport/metrics" > metrics.txt
for series in jlog_database_calls_in_flight jlog_database_call_seconds hb_requests jlog_fetches_total jlog_entries_saved_total; do
  grep -q "^$series" metrics.txt || { echo "nodes-kill9: the node's metrics lack $series" >&2; exit 1; }
done

"$JLOG" history alice.wal --zone "$zone" --json --server "$url" --credential alice.cred > history.json
dupes=$("$PSQL" -h "$work/pg" -U jlog -d jlog -qAtc "SELECT count(*) - count(DISTINCT (zone, incarnation, entry_id)) FROM jlog_records WHERE entry_id IS NOT NULL")
python3 "$scripts/shared-list-check.py" "$JLOG" "$zone" history.json alice.wal "$dupes"
for s in alice.wal bob.wal carol.wal; do "$JLOG" verify "$s" >/dev/null || { echo "verify failed on $s" >&2; exit 1; }; done
# A node that stops saves where its devices caught up; the operator reads it from the database.
kill -TERM "${pids[0]}"
for _ in $(seq 1 100); do kill -0 "${pids[0]}" 2>/dev/null || break; sleep 0.1; done
pids[0]=""
"$JLOG" accounts devices --database "$db" --json > devices.json
python3 - "$zone" <<'PY'
import json, sys
rows = [d for d in json.load(open("devices.json"))["devices"] if d["zone"] == sys.argv[1]]
accounts = {d["account"] for d in rows}
if not {"alice", "bob", "carol"} <= accounts:
    sys.exit(f"nodes-kill9: jlog accounts devices --database lists {sorted(accounts)} for the list, not every device's account")
PY
compactions=$(cat node*.log | grep -c compacted || true)
echo "nodes-kill9: $kills SIGKILLs of two nodes over one PostgreSQL behind nginx, $compactions compactions, 3 devices: converged, nothing lost, nothing duplicated; the database metrics and jlog accounts devices --database answer"
