#!/usr/bin/env bash
# Usage: scripts/live-readers.sh [SECONDS=30] [JLOG=.build/debug/jlog]
# Readers beside a writer, across processes (issue 18): `jlog import --sync` appends continuously
# and is killed with SIGKILL at random moments and restarted, while reader processes run every read
# command in a loop (zones, changes paged by token, show, history, verify, dump). No reader may crash,
# report corruption (exit 2), see an entry that later disappears or changes, or see sequences go
# backwards; at the end the store verifies clean and holds every acknowledged sequence.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
JLOG="${2:-.build/debug/jlog}"
[ -x "$JLOG" ] || { echo "live-readers: $JLOG not found; run 'swift build --product jlog' first" >&2; exit 2; }
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
store="$work/live.wal"
python3 - "$work/input.jsonl" <<'PY'
import json, random, sys
random.seed(11)
with open(sys.argv[1], "w") as f:
    for i in range(200000):
        z = f"List-{i % 3}"
        op = random.choice(["add", "add", "add", "markOff", "rename"])
        d = {"zone": z, "op": op, "by": random.choice(["alice", "bob"]),
             "at": f"2026-11-{1 + (i // 50000):02d}T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z", "id": f"e{i}"}
        if op == "add": d.update(item=f"item-{i}", text=f"thing {i}", after=None)
        elif op == "rename": d["text"] = f"List {i}"
        else: d["item"] = f"item-{max(0, i - 3)}"
        f.write(json.dumps(d) + "\n")
PY
# The writer: import from where the store ends, killed at random and restarted.
writer() {
  local end=$((SECONDS + seconds))
  while [ $SECONDS -lt $end ]; do
    have=$("$JLOG" inspect --json "$store" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["entries"])' 2>/dev/null || echo 0)
    tail -n +$((have + 1)) "$work/input.jsonl" | "$JLOG" import "$store" - --sync --batch-size $((RANDOM % 20 + 1)) --segment-size 65536 \
      >> "$work/acked" 2>>"$work/writer.err" &
    local pid=$!
    sleep "0.$(printf "%03d" $((RANDOM % 700 + 100)))"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
# A reader: pages the change feed of one zone with tokens, checks that sequences only rise and
# that an entry once seen is seen again unchanged; runs the other read commands in between.
reader() {
  local n=$1
  python3 - "$JLOG" "$store" "$seconds" "$n" <<'PY'
import json, subprocess, sys, time, random
jlog, store, seconds, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
random.seed(n)
seen = {}          # seq -> entry id, for List-<n>
token, last = None, 0
end = time.time() + seconds
runs = 0
def run(*args, ok=(0,)):
    global runs
    runs += 1
    p = subprocess.run([jlog, *args], capture_output=True, text=True, timeout=60)
    if p.returncode < 0 or p.returncode >= 124:
        sys.exit(f"reader {n}: jlog {' '.join(args)} died (status {p.returncode}): {p.stderr[-500:]}")
    if p.returncode not in ok:
        sys.exit(f"reader {n}: jlog {' '.join(args)} exited {p.returncode}: {p.stderr[-500:]}{p.stdout[-1500:]}")
    return p
while time.time() < end:
    import os
    if not os.path.isdir(store) or not any(f.endswith(".seg") for f in os.listdir(store)):
        time.sleep(0.05); continue
    zone = f"List-{n % 3}"
    args = ["changes", store, "--zone", zone, "--json", "--limit", str(random.choice([1, 7, 100, 1000]))]
    if token: args += ["--since", token]
    p = run(*args, ok=(0, 3))
    if p.returncode == 3:      # the zone has no entry yet
        continue
    page = json.loads(p.stdout)
    for e in page["entries"]:
        if e["seq"] <= last: sys.exit(f"reader {n}: sequence {e['seq']} after {last}")
        last = e["seq"]; seen[e["seq"]] = e["id"]
    token = page["token"]
    k = random.randrange(6)
    if k == 0:
        # Read the zone again from the start: everything seen before is still there, unchanged.
        t, again = None, {}
        while True:
            a = ["changes", store, "--zone", zone, "--json", "--limit", "5000"] + (["--since", t] if t else [])
            q = json.loads(run(*a).stdout)
            for e in q["entries"]: again[e["seq"]] = e["id"]
            t = q["token"]
            if not q["moreComing"]: break
        for s, i in seen.items():
            if again.get(s) != i: sys.exit(f"reader {n}: sequence {s} ({i}) disappeared or changed ({again.get(s)})")
    elif k == 1: run("zones", store, "--json")
    elif k == 2: run("show", store, "--zone", zone, "--json")
    elif k == 3: run("history", store, "--zone", zone, "--json")
    elif k == 4: run("verify", store, ok=(0, 1))   # 1: a torn tail the killed writer left (not corruption)
    else: run("dump", store, "--json")
print(f"reader {n}: {runs} commands, {len(seen)} entries of List-{n % 3} seen in order, none lost", file=sys.stderr)
PY
}
writer &
pids+=($!)
sleep 1
for n in 0 1 2; do reader "$n" & pids+=($!); done
status=0
for p in "${pids[@]:1}"; do wait "$p" || status=1; done
wait "${pids[0]}" || true
[ "$status" -eq 0 ] || { echo "live-readers: a reader failed" >&2; tail -5 "$work/writer.err" >&2; exit 1; }
# The end: a writer's open repairs what the last kill left; every acked sequence is there.
"$JLOG" import "$store" /dev/null 2>/dev/null
"$JLOG" verify "$store" >/dev/null || { echo "live-readers: verify failed at the end" >&2; "$JLOG" verify "$store" >&2; exit 1; }
acked=$(grep -o '^acked [0-9]*' "$work/acked" | cut -d' ' -f2 | sort -n | tail -1)
last=$("$JLOG" inspect --json "$store" | python3 -c 'import json,sys; print(json.load(sys.stdin)["lastSequence"])')
[ "${acked:-0}" -le "$last" ] || { echo "live-readers: acknowledged sequence $acked missing (store ends at $last)" >&2; exit 1; }
echo "live-readers: ${seconds}s of kill -9 and restart beside 3 reader processes: no reader failed; every acked sequence (through ${acked:-0}) present"
