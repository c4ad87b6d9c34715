#!/usr/bin/env bash
# Across processes, on loopback: `jlog serve` and three device processes (alice, bob and carol,
# each its own store) edit one shared list and sync at random while the server is killed with
# SIGKILL and restarted at random moments, ROUNDS times (default 10), compacting every 2 s with
# no retention (so devices also hit expired tokens and re-fetch). Then every device syncs until
# quiet and the script checks: every device shows exactly the server's list; every change a
# device acknowledged (`jlog add` etc. printed its id) is in the server's history; no entry id
# is stored twice anywhere; `jlog verify` passes on every store.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts="$(pwd)/scripts"
ROUNDS="${1:-10}"
OPS="${OPS:-25}"
[ -x "${JLOG:-.build/debug/jlog}" ] || swift build --product jlog >/dev/null
JLOG="$(pwd)/${JLOG:-.build/debug/jlog}"
work="$(mktemp -d)"
server_pid=""
devices=()
cleanup() {
  for p in "${devices[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
srv=server.wal
for a in alice bob carol; do "$JLOG" accounts add "$srv" "$a" --output "$a.cred" 2>/dev/null; done

port=0
compact_every=2
start_server() {
  rm -f port
  "$JLOG" serve "$srv" --listen "127.0.0.1:$port" --port-file port --retention-days 0 --compact-every "$compact_every" --rate-limit 0 >>server.log 2>&1 &
  server_pid=$!
  disown "$server_pid" 2>/dev/null || true
  for _ in $(seq 1 200); do [ -s port ] && break; sleep 0.05; done
  [ -s port ] || { echo "the server did not start" >&2; cat server.log >&2; exit 1; }
  port=$(cat port)
}
start_server
url="http://127.0.0.1:$port"
. "$scripts/shared-list-devices.sh"
for p in alice bob carol; do device "$p" & devices+=($!); done

# The server dies (SIGKILL) and comes back at random moments while the devices work.
kills=0
while [ $kills -lt "$ROUNDS" ]; do
  # Mostly under a second; sometimes long enough for a compaction (every 2 s) to run.
  if [ $((RANDOM % 3)) -eq 0 ]; then sleep "2.$((RANDOM % 9))"; else sleep "0.$((RANDOM % 8 + 2))"; fi
  kill -9 "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  kills=$((kills + 1))
  sleep "0.$((RANDOM % 4))"
  start_server
done
for p in "${devices[@]}"; do wait "$p" || true; done
devices=()

# The periodic compaction stops before the quiet phase: with no retention, a compaction that ran
# after the devices' last sync would purge what they still show, and the check would race it. The
# server is killed once more and comes back without it; the devices then adopt whatever the last
# compaction purged (a crash in the middle of one included).
kill -9 "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
kills=$((kills + 1))
compact_every=0
start_server

# Quiet: sync everyone until nothing moves.
for _ in 1 2 3 4; do for p in alice bob carol; do sync_once "$p" phone || true; done; done

"$JLOG" history "$srv" --zone "$zone" --json > history.json
python3 "$scripts/shared-list-check.py" "$JLOG" "$zone" history.json "$srv"
for s in "$srv" alice.wal bob.wal carol.wal; do "$JLOG" verify "$s" >/dev/null || { echo "verify failed on $s" >&2; exit 1; }; done
echo "server-kill9: $kills SIGKILLs of the server, $(grep -c compacted server.log || true) compactions, 3 devices: converged, nothing lost, nothing duplicated"
