#!/usr/bin/env bash
# Usage: scripts/kill9.sh [KILLS=200] [JLOG=.build/debug/jlog]
# Runs `jlog import --sync` in a child process, kills it with SIGKILL at a random moment, and
# checks after every kill that every acknowledged sequence is present, that the store has no
# gaps, and that `jlog verify` passes once the store has been reopened (recovered).
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-200}"
JLOG="${2:-.build/debug/jlog}"
[ -x "$JLOG" ] || { echo "kill9: $JLOG not found; run 'swift build --product jlog' first" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$work/input.jsonl" <<'PY'
import json, random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    for i in range(30000):
        z = f"List-{i % 7}"
        op = random.choice(["add", "add", "add", "markOff", "delete", "rename"])
        d = {"zone": z, "op": op, "by": random.choice(["alice", "bob", "carol"]),
             "at": f"2026-11-{1 + i // 20000:02d}T{(i // 1000) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"}
        if op == "add": d.update(item=f"item-{i}", text=f"thing number {i}", after=None if i % 5 == 0 else f"item-{i-1}")
        elif op == "rename": d["text"] = f"List {i}"
        else: d["item"] = f"item-{i - 3}"
        f.write(json.dumps(d) + "\n")
PY
acked_max=0
for k in $(seq 1 "$kills"); do
  # A fresh store every 10 kills keeps each verification fast; each store still sees 10 crashes.
  store="$work/list-$(( (k - 1) / 10 )).wal"
  if [ $(( (k - 1) % 10 )) -eq 0 ]; then acked_max=0; fi
  "$JLOG" import "$store" "$work/input.jsonl" --sync --batch-size $((RANDOM % 50 + 1)) > "$work/acked" 2>"$work/err" &
  pid=$!
  sleep "0.$(printf "%03d" $((RANDOM % 900 + 50)))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  last=$(grep -o '^acked [0-9]*' "$work/acked" | tail -1 | cut -d' ' -f2 || true)
  [ -n "$last" ] && [ "$last" -gt "$acked_max" ] && acked_max=$last
  # Reopen for writing (recovery), then the store must verify clean and hold every acked sequence.
  "$JLOG" import "$store" /dev/null 2>/dev/null
  if ! "$JLOG" verify "$store" > "$work/verify" 2>&1; then
    echo "kill $k: verify failed after recovery:" >&2; cat "$work/verify" >&2; exit 1
  fi
  read -r lastseq entries < <("$JLOG" inspect --json "$store" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["lastSequence"], d["entries"])')
  if [ "$lastseq" -lt "$acked_max" ]; then
    echo "kill $k: acknowledged sequence $acked_max is missing (store ends at $lastseq)" >&2; exit 1
  fi
  if [ "$entries" -ne "$lastseq" ]; then
    echo "kill $k: $entries entries but last sequence $lastseq: a gap" >&2; exit 1
  fi
  if [ $((k % 20)) -eq 0 ]; then echo "kill9: $k kills survived (store $(( (k - 1) / 10 )) at sequence $lastseq, acked $acked_max)" >&2; fi
done
echo "kill9: $kills kills survived; every acknowledged sequence present, no gaps, verify clean after each recovery"
