#!/usr/bin/env bash
# Two `jlog serve --database` nodes of adjacent versions over one PostgreSQL, behind nginx (round
# robin), on loopback (Spec/SYNC.md §11.4): node 0 runs the previous release's jlog ($PREV_JLOG,
# built from the commit before the change), node 1 this one ($JLOG). Three devices of this
# version (alice, bob and carol) edit one shared list and sync at random through nginx, OPS steps
# each, while both nodes compact every 2 s with no retention; then compaction stops, every device
# syncs until quiet through the new node, and the script checks what nodes-kill9.sh checks: every
# device shows the same list, every acknowledged change is in the service's history, no id is
# stored twice on a device or in the database, and `jlog verify` passes on every store.
#
#   PREV_JLOG=/path/to/previous/jlog scripts/nodes-two-versions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OPS="${OPS:-40}"
[ -x "${PREV_JLOG:-}" ] || { echo "nodes-two-versions: set PREV_JLOG to the previous release's jlog binary" >&2; exit 2; }
[ -x "${JLOG:-.build/debug/jlog}" ] || swift build --product jlog >/dev/null
JLOG="$(pwd)/${JLOG:-.build/debug/jlog}"
NEW_JLOG="$JLOG"
PSQL="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql"
scripts="$(pwd)/scripts"
work="$(mktemp -d /tmp/jlog-versions.XXXXXX)"
chmod 755 "$work"
pids=("" "")
devices=()
. "$scripts/jlog-nodes.sh"
trap cleanup_nodes EXIT
cd "$work"
# The database is made by the previous version's node, as it was before the upgrade.
JLOG="$PREV_JLOG"
start_database
ports=("$(free_port)" "$(free_port)")
front="$(free_port)"
node_flags=(--retention-days 0 --compact-every 2 --rate-limit 0)
start_node 0
JLOG="$NEW_JLOG"
start_node 1
start_front "$work/nginx" "$front"
url="http://127.0.0.1:$front"
. "$scripts/shared-list-devices.sh"
for p in alice bob carol; do device "$p" & devices+=($!); done
for p in "${devices[@]}"; do wait "$p" || true; done
devices=()

# The quiet phase through the new node alone, with no compaction racing the check.
for k in 0 1; do kill -9 "${pids[$k]}" 2>/dev/null || true; wait "${pids[$k]}" 2>/dev/null || true; pids[$k]=""; done
node_flags=(--compact-every 0 --rate-limit 0)
start_node 1
url="http://127.0.0.1:${ports[1]}"
for _ in 1 2 3 4; do for p in alice bob carol; do sync_once "$p" phone || true; done; done
"$JLOG" history alice.wal --zone "$zone" --json --server "$url" --credential alice.cred > history.json
dupes=$("$PSQL" -h "$work/pg" -U jlog -d jlog -qAtc "SELECT count(*) - count(DISTINCT (zone, incarnation, entry_id)) FROM jlog_records WHERE entry_id IS NOT NULL")
python3 "$scripts/shared-list-check.py" "$JLOG" "$zone" history.json alice.wal "$dupes"
for s in alice.wal bob.wal carol.wal; do "$JLOG" verify "$s" >/dev/null || { echo "verify failed on $s" >&2; exit 1; }; done
compactions=$(cat node*.log | grep -c compacted || true)
echo "nodes-two-versions: a node of the previous version and one of this version over one PostgreSQL behind nginx, $compactions compactions, 3 devices x $OPS steps: converged, nothing lost, nothing duplicated"
