#!/usr/bin/env bash
# Runs the seeded sync simulation (jlog simulate, every fault) over a range of seeds and fails on
# the first seed that does not converge or loses or duplicates a change; prints the command that
# replays it.
#
#   scripts/simulate-sweep.sh [FIRST] [LAST] [OPS] [REPLICAS]   (default 1 30 200 3)
#
# With POSTGRES=1 the service runs over PostgreSQL (`jlog simulate --database`): a private
# cluster is started for the sweep (scripts/postgres.sh), each seed in a schema of its own.
# With SEALED=1 every list is sealed (`jlog simulate --sealed`, Spec/SEALING.md): a seed also
# fails when a sealed text a device shows does not open.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
first="${1:-1}" last="${2:-30}" ops="${3:-200}" replicas="${4:-3}"
(cd "$root" && swift build --product jlog >&2)
jlog="$(cd "$root" && swift build --product jlog --show-bin-path)/jlog"
extra=()
over=""
if [[ "${POSTGRES:-0}" == 1 ]]; then
    pg="$(mktemp -d /tmp/jlog-sim-pg.XXXXXX)"
    trap 'bash "$root/scripts/postgres.sh" stop "$pg"; rm -rf "$pg"' EXIT
    bash "$root/scripts/postgres.sh" start "$pg" >/dev/null
    extra=(--database "postgres://jlog@/jlog?host=$pg")
    over=", over PostgreSQL"
fi
if [[ "${SEALED:-0}" == 1 ]]; then
    extra+=(--sealed)
    over="$over, sealed lists"
fi
failed=0
results="$(mktemp /tmp/jlog-sim-results.XXXXXX)"
for seed in $(seq "$first" "$last"); do
    if ! out="$("$jlog" simulate --replicas "$replicas" --ops "$ops" --seed "$seed" --faults all --json "${extra[@]}" 2>&1)"; then
        echo "simulate-sweep: seed $seed FAILED: $out" >&2
        echo "  replay: jlog simulate --replicas $replicas --ops $ops --seed $seed --faults all ${extra[*]}" >&2
        failed=1
    else
        echo "$out" >> "$results"
    fi
done
# What the compactions cost the devices: followed in place, or re-fetched, by cause.
python3 - "$results" <<'PY' || true
import json, sys, collections
causes, followed, compactions, within = collections.Counter(), 0, 0, 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    causes.update(r.get("refetchCauses", {}))
    followed += r.get("compactionsFollowed", 0)
    compactions += r.get("compactions", 0)
    within += r.get("refetchesWithinRetention", 0)
print(f"simulate-sweep: {compactions} compactions, {followed} followed by devices; re-fetches by cause: " +
      ", ".join(f"{k} {v}" for k, v in sorted(causes.items())) +
      f"; {within} of them for a compaction on a device whose last full sync was within the retention")
PY
rm -f "$results"
[[ $failed -eq 0 ]] && echo "simulate-sweep: seeds $first–$last ($ops steps, $replicas devices, every fault$over) converged, nothing lost or duplicated"
exit $failed
