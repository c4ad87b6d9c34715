# Sourced by server-kill9.sh, nodes-kill9.sh and nodes-db-restart.sh (not run alone): three
# devices (alice, bob and carol, each a store in the working directory with NAME.cred) on one
# shared list at $url, through $JLOG. Defines sync_once and device, and makes alice/shared shared
# with bob and carol; `device NAME` then takes $OPS random steps (or, when $DEVICE_STOP names a
# file, steps until that file exists, at most $OPS), writing every change it acknowledges to
# NAME.acked. Every sync's report (`jlog sync --json`, one line each) is appended to NAME.syncs
# and what it printed on stderr to NAME.sync-errors (scripts/sync-reports.py counts them).
sync_once() { "$JLOG" sync "$1.wal" --server "$url" --credential "$1.cred" --device "$2" --json >>"$1.syncs" 2>>"$1.sync-errors"; }

# Alice makes the list and shares it; Bob and Carol join (through whichever server answers).
sync_once alice phone; "$JLOG" create-list alice.wal shared >/dev/null
sync_once alice phone
for p in bob carol; do
  sync_once "$p" phone
  inv=$("$JLOG" share alice.wal --zone shared --with "$p" --server "$url" --credential alice.cred)
  "$JLOG" accept "$p.wal" "$inv" --server "$url" --credential "$p.cred" >/dev/null
  sync_once "$p" phone
done
zone=alice/shared

# One device: OPS random steps; every change it acknowledges goes into NAME.acked.
device() {
  local who=$1 n=0
  RANDOM=$(( $(od -An -N2 -tu2 /dev/urandom) ))
  while [ $n -lt "$OPS" ]; do
    [ -n "${DEVICE_STOP:-}" ] && [ -e "$DEVICE_STOP" ] && break
    n=$((n + 1))
    case $((RANDOM % 10)) in
      0|1|2|3)
        out=$("$JLOG" add "$who.wal" --zone "$zone" "$who item $n" 2>/dev/null) && echo "$out" | sed -n 's/.* as \([^;]*\);.*/\1/p' >> "$who.acked" ;;
      4|5)
        item=$("$JLOG" show "$who.wal" --zone "$zone" --json 2>/dev/null | python3 -c '
import json, random, sys
items = [i["item"] for i in json.load(sys.stdin)["items"] if i["state"] == "active"]
print(random.choice(items) if items else "")' || true)
        if [ -n "$item" ]; then
          out=$("$JLOG" mark-off "$who.wal" --zone "$zone" "$item" 2>/dev/null) && echo "$out" | sed -n 's/.* as \([^;]*\);.*/\1/p' >> "$who.acked" || true
        fi ;;
      *) sync_once "$who" phone || true ;;
    esac
  done
}
