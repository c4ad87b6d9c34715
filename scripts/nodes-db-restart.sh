#!/usr/bin/env bash
# Faults at the seam between the nodes and their database (issue 46), over HTTP: two
# `jlog serve --database` nodes over one PostgreSQL (a private cluster, scripts/postgres.sh),
# behind nginx (scripts/nginx-front.sh), on loopback and Unix sockets only. Three device processes
# (alice, bob and carol, each its own store; scripts/shared-list-devices.sh) edit one shared list
# and sync at random through nginx while, ROUNDS times (argument 1, default 4), PostgreSQL itself
# is faulted, a few seconds apart so that the devices sync across each fault:
#   - restarted: `pg_ctl -m immediate stop` (as a crash or a failover: no shutdown checkpoint,
#     every connection of the nodes cut), then started again (crash recovery from the WAL);
#   - paused: SIGSTOP to the postmaster and all its backends for 2–4 s, then SIGCONT (a database
#     that hangs: connections stay open and answer nothing).
# The rounds alternate between the two, the first chosen at random (SEED, printed, replays a run).
# The nodes stay up throughout. Then every device syncs until quiet and the script checks, as
# scripts/nodes-kill9.sh does: every device shows the same list; every change a device
# acknowledged is in the service's history; no entry id is stored twice on any device or in the
# database; `jlog verify` passes on every device's store.
#
# What a database restart or failover must not do to a device, and what the final line counts
# (each must be 0, else the script exits 1):
#   - sign it out: a sync whose report says signedOut (the service refused its credential, as
#     when the credential check reads a database that has gone away as "no such credential"), or
#     a device whose sync-status has no account;
#   - lose an acknowledged change (scripts/shared-list-check.py);
#   - send it back to a re-fetch of a list it holds (a sync whose report lists the list under
#     refetched, or a re-fetch wanted or under way at the end). The nodes run with compaction off
#     (--compact-every 0), so nothing legitimate expires a token here: every re-fetch is spurious
#     (each device's first fetch of the list is part of the setup, before the faults, and is not
#     counted).
# A sync that finds the service offline or busy while the database is down is expected (a node
# holds a request until the database answers; the device gives up after its timeout): its changes
# stay queued and go up on a later sync (the final line gives the count of incomplete syncs).
#
# Every sync's report is in NAME.syncs (`jlog sync --json`, with a mark line at each fault);
# KEEP=1 leaves the working directory (and says where) instead of removing it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-4}"
OPS="${OPS:-600}"           # at most this many steps per device; they stop when the rounds are over
SEED="${SEED:-$RANDOM}"
[ -x "${JLOG:-.build/debug/jlog}" ] || swift build --product jlog >/dev/null
JLOG="$(pwd)/${JLOG:-.build/debug/jlog}"
PSQL="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql"
scripts="$(pwd)/scripts"
work="$(mktemp -d /tmp/jlog-db-restart.XXXXXX)"
chmod 755 "$work"
pids=("" "")
devices=()
paused=""
started=$SECONDS
cleanup() {
  [ -n "$paused" ] && { pkill -CONT -P "$paused" 2>/dev/null || true; kill -CONT "$paused" 2>/dev/null || true; }
  for p in "${devices[@]}"; do kill "$p" 2>/dev/null || true; pkill -P "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  bash "$scripts/nginx-front.sh" stop "$work/nginx" || true
  bash "$scripts/postgres.sh" stop "$work/pg" || true
  if [ "${KEEP:-0}" = 1 ]; then echo "nodes-db-restart: the working directory stays: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
. "$scripts/jlog-nodes.sh"
start_database
ports=("$(free_port)" "$(free_port)")
front="$(free_port)"
node_flags=(--compact-every 0 --rate-limit 0)
start_node 0
start_node 1
start_front "$work/nginx" "$front"
url="http://127.0.0.1:$front"
. "$scripts/shared-list-devices.sh"
# The setup's syncs (bob's and carol's first fetch of the list among them) are not counted.
for p in alice bob carol; do mv "$p.syncs" "$p.setup-syncs"; : > "$p.syncs"; done
mark() { for p in alice bob carol; do printf '{"mark":"%s"}\n' "$1" >> "$p.syncs"; done; echo "$(date +%T.%N | cut -c1-12) $1" >> faults.log; }

export DEVICE_STOP="$work/devices.stop"
for p in alice bob carol; do device "$p" & devices+=($!); done

# PostgreSQL is restarted or paused, ROUNDS times, a few seconds apart.
echo "nodes-db-restart: seed $SEED, $ROUNDS rounds" >&2
RANDOM=$SEED
first=$((RANDOM % 2))
restarts=0 pauses=0 round=0
while [ $round -lt "$ROUNDS" ]; do
  round=$((round + 1))
  sleep "$((RANDOM % 3 + 3)).$((RANDOM % 10))"      # 3–6 s of syncing before each fault
  if [ $(((first + round) % 2)) -eq 0 ]; then
    mark "round $round: PostgreSQL stops (immediate)"
    bash "$scripts/postgres.sh" stop-immediate "$work/pg"
    sleep "0.$((RANDOM % 10))"
    bash "$scripts/postgres.sh" start "$work/pg" >/dev/null
    restarts=$((restarts + 1))
    mark "round $round: after PostgreSQL restarted"
  else
    postmaster=$(head -1 "$work/pg/data/postmaster.pid")
    mark "round $round: PostgreSQL paused"
    paused=$postmaster
    kill -STOP "$postmaster"
    pkill -STOP -P "$postmaster" || true
    sleep "$((RANDOM % 3 + 2)).$((RANDOM % 10))"
    pkill -CONT -P "$postmaster" || true
    kill -CONT "$postmaster"
    paused=""
    pauses=$((pauses + 1))
    mark "round $round: after PostgreSQL resumed"
  fi
done
sleep "$((RANDOM % 3 + 3))"                           # the devices sync across the last fault too
touch "$DEVICE_STOP"
# Each device finishes the step it is in (bounded: 60 s, then it is stopped).
for _ in $(seq 1 600); do
  alive=0
  for p in "${devices[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive -eq 0 ] && break
  sleep 0.1
done
for p in "${devices[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
devices=()

# Quiet: every device syncs until a pass in which none sent, applied or re-fetched anything.
quiet=no
for pass in $(seq 1 10); do
  mark "quiet pass $pass"
  for p in alice bob carol; do sync_once "$p" phone || true; done
  python3 "$scripts/sync-reports.py" quiet alice bob carol && { quiet=yes; break; }
done

problems=()
[ $quiet = yes ] || problems+=("the devices did not become quiet in 10 passes")
"$JLOG" history alice.wal --zone "$zone" --json --server "$url" --credential alice.cred > history.json || problems+=("jlog history failed")
dupes=$("$PSQL" -h "$work/pg" -U jlog -d jlog -qAtc "SELECT count(*) - count(DISTINCT (zone, incarnation, entry_id)) FROM jlog_records WHERE entry_id IS NOT NULL") \
  || { problems+=("the database's duplicates could not be counted"); dupes=0; }
check=$(python3 "$scripts/shared-list-check.py" "$JLOG" "$zone" history.json alice.wal "$dupes" 2>&1) || problems+=("shared-list-check.py failed")
echo "$check"
lost=$(echo "$check" | sed -n 's/^acknowledged changes: [0-9]* (\([0-9]*\) lost).*/\1/p')
[ -n "$lost" ] || lost="?"
for s in alice.wal bob.wal carol.wal; do "$JLOG" verify "$s" >/dev/null || problems+=("jlog verify failed on $s"); done
reports=$(python3 "$scripts/sync-reports.py" --jlog "$JLOG" counts alice bob carol) || problems+=("sync-reports.py failed")
counts=$(echo "$reports" | head -1)
signed_out=$(echo "$counts" | sed -n 's/.*signed_out_devices=\([0-9]*\).*/\1/p')
refetches=$(echo "$counts" | sed -n 's/.*refetches=\([0-9]*\).*/\1/p')
syncs=$(echo "$counts" | sed -n 's/^syncs=\([0-9]*\).*/\1/p')
incomplete=$(echo "$counts" | sed -n 's/.*incomplete=\([0-9]*\).*/\1/p')
signed_out_syncs=$(echo "$counts" | sed -n 's/.*signed_out_syncs=\([0-9]*\).*/\1/p')
for v in signed_out refetches syncs incomplete signed_out_syncs; do [ -n "${!v}" ] || printf -v "$v" '?'; done
[ "$signed_out" = 0 ] || problems+=("devices signed out")
[ "$lost" = 0 ] || problems+=("acknowledged changes lost")
[ "$refetches" = 0 ] || problems+=("spurious re-fetches")

if [ ${#problems[@]} -gt 0 ]; then
  echo "--- faults"; cat faults.log
  echo "--- syncs signed out or re-fetched"; echo "$reports" | tail -n +2 | head -40
  for p in alice bob carol; do
    [ -s "$p.sync-errors" ] && { echo "--- $p.sync-errors (last 10 lines)"; tail -10 "$p.sync-errors"; }
  done
  for k in 0 1; do echo "--- node$k.log (last 25 lines)"; tail -25 "node$k.log"; done
  echo "--- problems"; printf '%s\n' "${problems[@]}"
fi
summary="$ROUNDS rounds ($restarts PostgreSQL restarts, $pauses pauses) under two nodes behind nginx, 3 devices, $syncs syncs ($incomplete incomplete); devices signed out: $signed_out ($signed_out_syncs syncs), acknowledged changes lost: $lost, spurious re-fetches: $refetches; $((SECONDS - started)) s"
if [ ${#problems[@]} -gt 0 ]; then
  echo "nodes-db-restart: FAILED (seed $SEED): $summary"
  exit 1
fi
echo "nodes-db-restart: $summary; converged, nothing duplicated, jlog verify passes"
