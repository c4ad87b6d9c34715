#!/usr/bin/env bash
# Usage: scripts/untrusted-input.sh [ROUNDS=60] [JLOG=.build/debug/jlog]
# Feeds jlog arbitrary bytes, as a user's diagnostic attachment might be: random files, damaged
# copies of a real segment, random JSON Lines, and stores whose index, key or snapshots are
# garbage, and consumer files that are garbage or damaged. Every run must end with a clean error (exit 1-6), never a crash (a signal), a hang
# (20 s) or memory beyond 1 GiB of address space per process (the Swift runtime reserves much of
# that up front); inspect and verify may report the damage on stdout instead of an error.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-60}"
JLOG="${2:-.build/debug/jlog}"
[ -x "$JLOG" ] || { echo "untrusted-input: $JLOG not found; run 'swift build --product jlog' first" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
runs=0

# Runs jlog with a memory cap and a time limit; records a failure on a signal, a hang or exit 0
# when an error was expected.
check() {
  local expect_error="$1"; shift
  runs=$((runs + 1))
  ( ulimit -v 1048576; timeout 20 "$JLOG" "$@" ) >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" -ge 124 ]; then
    echo "FAIL (exit $rc: crash, signal or hang): jlog $*" >&2; tail -3 "$work/err" >&2; failures=$((failures + 1))
  elif [ "$expect_error" = 1 ] && [ "$rc" -eq 0 ]; then
    echo "FAIL (accepted garbage): jlog $*" >&2; failures=$((failures + 1))
  elif [ "$rc" -ne 0 ] && ! grep -q "jlog: " "$work/err" && ! grep -qE "problem|health|corruption|torn" "$work/out"; then
    echo "FAIL (exit $rc without an error message): jlog $*" >&2; failures=$((failures + 1))
  fi
}

# A real store to damage.
"$JLOG" import "$work/real.wal" examples/weekly-shop.jsonl >/dev/null 2>&1
"$JLOG" snapshot "$work/real.wal" >/dev/null 2>&1
"$JLOG" consumers "$work/real.wal" --register uploaded --lease-until 2030-01-01T00:00:00Z >/dev/null 2>&1
"$JLOG" consumers "$work/real.wal" --advance uploaded --zone List-db6a6e29-weekly --to 12 >/dev/null 2>&1
consumer="$(ls "$work"/real.wal/consumers/*.consumer | head -n 1)"
csize=$(stat -c %s "$consumer")
seg="$(ls "$work"/real.wal/*.seg | head -n 1)"
size=$(stat -c %s "$seg")
end=$("$JLOG" inspect --json "$work/real.wal" | python3 -c 'import json,sys; print(json.load(sys.stdin)["segments"][0]["bytes"])')

for i in $(seq 1 "$rounds"); do
  # 1. Random bytes of random length, as a file and as a store's only segment.
  n=$(( (RANDOM * 32768 + RANDOM) % 200000 ))
  head -c "$n" /dev/urandom > "$work/random.bin"
  for cmd in inspect verify dump; do check 1 "$cmd" "$work/random.bin"; done
  rm -rf "$work/r.wal"; mkdir -p "$work/r.wal"; cp "$work/random.bin" "$work/r.wal/00000000000000000001.seg"
  for cmd in inspect verify dump; do check 1 "$cmd" "$work/r.wal"; done
  check 1 zones "$work/r.wal"

  # 2. A real segment with a few random bytes flipped inside its data, or cut short.
  cp "$seg" "$work/flip.seg"
  for k in 1 2 3; do
    off=$(( (RANDOM * 32768 + RANDOM) % end ))
    printf "\\x$(printf %02x $((RANDOM % 256)))" | dd of="$work/flip.seg" bs=1 seek="$off" conv=notrunc status=none
  done
  for cmd in inspect verify dump; do check 0 "$cmd" "$work/flip.seg"; done
  head -c $(( RANDOM % end )) "$seg" > "$work/cut.seg"
  for cmd in inspect verify dump; do check 0 "$cmd" "$work/cut.seg"; done

  # 3. Random JSON-ish lines for import.
  python3 - "$work/lines.jsonl" "$i" <<'PY'
import json, random, sys
random.seed(int(sys.argv[2]))
keys = ["zone", "op", "item", "text", "after", "by", "at", "hlc", "id", "x"]
vals = [None, 1, -1, 1e308, "", "a" * 70000, "List-1", "add", "markOff", "2026-11-22T09:00:00Z", "99:99", [], {}, True]
with open(sys.argv[1], "w") as f:
    for _ in range(random.randint(1, 20)):
        if random.random() < 0.3:
            f.write(bytes(random.getrandbits(8) for _ in range(random.randint(0, 300))).decode("latin-1") + "\n")
        else:
            f.write(json.dumps({random.choice(keys): random.choice(vals) for _ in range(random.randint(0, 9))}) + "\n")
PY
  rm -rf "$work/imp.wal"
  check 1 import "$work/imp.wal" "$work/lines.jsonl"

  # 4. A real store whose index checkpoint, key or snapshots are garbage.
  rm -rf "$work/d.wal"; cp -r "$work/real.wal" "$work/d.wal"
  head -c $(( RANDOM % 4000 )) /dev/urandom > "$work/d.wal/index/zones.idx"
  for f in "$work"/d.wal/snapshots/*; do head -c $(( RANDOM % 3000 )) /dev/urandom > "$f"; done
  check 0 zones "$work/d.wal"
  check 0 show "$work/d.wal" --zone List-db6a6e29-weekly
  check 0 history "$work/d.wal" --zone List-db6a6e29-weekly
  check 0 inspect "$work/d.wal"
  check 1 changes "$work/d.wal" --zone List-db6a6e29-weekly --since "jlt2.$(head -c 58 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')"
  check 1 changes "$work/d.wal" --zone List-db6a6e29-weekly --since "jlt3.$(head -c 66 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')"

  # 5. Consumer files: the real one with bytes flipped or cut short, random bytes, one over the
  #    64 MiB limit (sparse), one that is a directory. Each is reported; none may crash or hang.
  rm -rf "$work/c.wal"; cp -r "$work/real.wal" "$work/c.wal"
  cf="$work/c.wal/consumers/$(basename "$consumer")"
  if [ $((i % 2)) -eq 0 ]; then
    off=$(( RANDOM % csize ))
    printf "\\x$(printf %02x $((RANDOM % 256)))" | dd of="$cf" bs=1 seek="$off" conv=notrunc status=none
  else
    head -c $(( RANDOM % csize )) "$consumer" > "$cf"
  fi
  head -c $(( RANDOM % 3000 )) /dev/urandom > "$work/c.wal/consumers/0123456789abcdef.consumer"
  (printf 'JLCM\x01\x01x\x01\x80\x80\x40'; head -c $(( RANDOM % 100 )) /dev/urandom) > "$work/c.wal/consumers/00000000000000ff.consumer"
  [ "$i" -eq 1 ] && truncate -s 70M "$work/c.wal/consumers/00000000000000aa.consumer"
  [ "$i" -eq 2 ] && mkdir -p "$work/c.wal/consumers/00000000000000bb.consumer"
  check 0 inspect "$work/c.wal"
  check 0 inspect --json "$work/c.wal"
  check 0 consumers "$work/c.wal"
  check 0 consumers --json "$work/c.wal"
  check 0 compact --dry-run "$work/c.wal" --now 2026-12-31T00:00:00Z
  check 0 compact --dry-run --json "$work/c.wal"
  check 0 consumers "$work/c.wal" --advance uploaded --zone List-db6a6e29-weekly --to 20
  check 0 consumers "$work/c.wal" --remove 0123456789abcdef.consumer

  head -c 20 /dev/urandom > "$work/d.wal/KEY"
  check 1 zones "$work/d.wal"

  # 6. EPOCHS and LOCK garbage, or cut short: readers and writers still give clean answers (a
  #    writer begins a new epoch and says so); and a store whose newest segment is gone is refused.
  rm -rf "$work/e.wal"; cp -r "$work/real.wal" "$work/e.wal"
  if [ $((i % 2)) -eq 0 ]; then head -c $(( RANDOM % 200 )) /dev/urandom > "$work/e.wal/EPOCHS"
  else head -c $(( RANDOM % $(stat -c %s "$work/real.wal/EPOCHS") )) "$work/real.wal/EPOCHS" > "$work/e.wal/EPOCHS"; fi
  head -c $(( RANDOM % 500 )) /dev/urandom > "$work/e.wal/LOCK"
  check 0 verify "$work/e.wal"
  check 0 zones "$work/e.wal"
  check 0 changes "$work/e.wal" --zone List-db6a6e29-weekly
  check 0 import "$work/e.wal" /dev/null
  rm -rf "$work/m.wal"; cp -r "$work/real.wal" "$work/m.wal"
  rm -f "$(ls "$work"/m.wal/*.seg | tail -n 1)"
  check 1 import "$work/m.wal" /dev/null
  check 1 verify "$work/m.wal"
done

echo "untrusted-input: $runs runs of jlog on arbitrary input, $failures failures (crash, hang, silent acceptance or no message)"
[ "$failures" -eq 0 ]
