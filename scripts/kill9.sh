#!/usr/bin/env bash
# Usage: scripts/kill9.sh [KILLS=200] [JLOG=.build/debug/jlog]
# Runs `jlog import --sync` in a child process, kills it with SIGKILL at a random moment, and
# checks after every kill that every acknowledged sequence is present, that the store has no
# gaps, and that `jlog verify` passes once the store has been reopened (recovered). Along the way
# (issue 17): with `LOCK` removed under a running writer, a second writer is still refused; and a
# copy of the store whose newest segment is removed is refused until the loss is accepted, after
# which a change token taken before is refused instead of skipping what took its place.
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
  if [ $((k % 4)) -eq 0 ]; then
    # A second writer after the lock file is removed: still refused (exit 3), never a second appender.
    sleep 0.05
    rm -f "$store/LOCK"
    set +e
    "$JLOG" import "$store" /dev/null 2>"$work/second"
    second=$?
    set -e
    if kill -0 "$pid" 2>/dev/null && [ "$second" -ne 3 ]; then
      echo "kill $k: a second writer was let in after LOCK was removed (exit $second)" >&2; cat "$work/second" >&2; exit 1
    fi
  fi
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
  if [ $((k % 10)) -eq 5 ] && [ "$(ls "$store"/*.seg | wc -l)" -gt 1 ]; then
    # The log's end moves back, on a copy: refused (exit 2); accepted, the old token is refused.
    rm -rf "$work/back.wal"; cp -r "$store" "$work/back.wal"
    tok=$("$JLOG" changes "$work/back.wal" --zone List-1 --json --limit 100000 | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
    rm -f "$(ls "$work"/back.wal/*.seg | tail -n 1)"
    set +e
    "$JLOG" import "$work/back.wal" /dev/null 2>/dev/null; refused=$?
    set -e
    [ "$refused" -eq 2 ] || { echo "kill $k: a log whose newest segment was removed was opened (exit $refused)" >&2; exit 1; }
    "$JLOG" recover "$work/back.wal" --accept-loss >/dev/null
    head -n 50 "$work/input.jsonl" | sed 's/"zone": "List-/"zone": "Again-/' | "$JLOG" import "$work/back.wal" - >/dev/null 2>&1
    printf '{"zone":"List-1","op":"rename","text":"after","by":"x","at":"2026-12-01T00:00:00Z"}\n' | "$JLOG" import "$work/back.wal" - >/dev/null 2>&1
    set +e
    "$JLOG" changes "$work/back.wal" --zone List-1 --since "$tok" >/dev/null 2>&1; answered=$?
    set -e
    [ "$answered" -eq 4 ] || { echo "kill $k: a token past the lost end was answered (exit $answered), not refused" >&2; exit 1; }
  fi
  if [ $((k % 20)) -eq 0 ]; then echo "kill9: $k kills survived (store $(( (k - 1) / 10 )) at sequence $lastseq, acked $acked_max)" >&2; fi
done
echo "kill9: $kills kills survived; every acknowledged sequence present, no gaps, verify clean after each recovery"
