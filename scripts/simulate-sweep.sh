#!/usr/bin/env bash
# Runs the seeded sync simulation (jlog simulate, every fault) over a range of seeds and fails on
# the first seed that does not converge or loses or duplicates a change; prints the command that
# replays it.
#
#   scripts/simulate-sweep.sh [FIRST] [LAST] [OPS] [REPLICAS]   (default 1 30 200 3)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
first="${1:-1}" last="${2:-30}" ops="${3:-200}" replicas="${4:-3}"
(cd "$root" && swift build --product jlog >&2)
jlog="$(cd "$root" && swift build --product jlog --show-bin-path)/jlog"
failed=0
for seed in $(seq "$first" "$last"); do
    if ! out="$("$jlog" simulate --replicas "$replicas" --ops "$ops" --seed "$seed" --faults all --json 2>&1)"; then
        echo "simulate-sweep: seed $seed FAILED: $out" >&2
        echo "  replay: jlog simulate --replicas $replicas --ops $ops --seed $seed --faults all" >&2
        failed=1
    fi
done
[[ $failed -eq 0 ]] && echo "simulate-sweep: seeds $first–$last ($ops steps, $replicas devices, every fault) converged, nothing lost or duplicated"
exit $failed
