#!/usr/bin/env bash
# The server's load test (issues 20 and 37; Benchmarks/README.md, "Server"): builds jlog and
# jlog-load in release mode, then drives, one after another in this run, with concurrent devices
# over loopback and beside the ceiling of Hummingbird's trivial endpoint on the same server:
#   1. `jlog serve` on a fresh store (the engine backend);
#   2. `jlog serve --database` over a private PostgreSQL cluster (scripts/postgres.sh): one node;
#   3. two such nodes over the same database, behind nginx (scripts/nginx-front.sh); the ceiling
#      is then measured through nginx.
# Arguments go to every jlog-load (default: 200 devices, 50 families, 3 runs of 10 s each way).
# JSON lines on stdout (each names its system), a summary on stderr. JLOG_SCRATCH names the
# SwiftPM scratch path to build in (default .build-bench; a first release build of the server's
# dependencies takes over 20 minutes on two cores). BACKENDS=engine skips PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
bash scripts/setup.sh >/dev/null
scratch="${JLOG_SCRATCH:-.build-bench}"
swift build -c release --scratch-path "$scratch" --product jlog >/dev/null
swift build -c release --scratch-path "$scratch" --product jlog-load >/dev/null
jlog="$root/$scratch/release/jlog"
load="$root/$scratch/release/jlog-load"
loadavg() { echo "{\"name\":\"load_average\",\"system\":\"machine\",\"unit\":\"1-minute load\",\"median\":$(cut -d' ' -f1 /proc/loadavg),\"at\":\"$1\"}"; }
loadavg start
"$load" --jlog "$jlog" --label journallog "$@"
if [ "${BACKENDS:-all}" = engine ]; then loadavg end; exit 0; fi

work="$(mktemp -d /tmp/jlog-bench-pg.XXXXXX)"
chmod 755 "$work"
nodes=()
cleanup() {
  for p in "${nodes[@]}"; do kill "$p" 2>/dev/null || true; done
  bash "$root/scripts/nginx-front.sh" stop "$work/nginx" || true
  bash "$root/scripts/postgres.sh" stop "$work/pg" || true
  rm -rf "$work"
}
trap cleanup EXIT
bash scripts/postgres.sh start "$work/pg" >/dev/null
db="postgres://jlog@/jlog?host=$work/pg"

loadavg postgres
"$load" --jlog "$jlog" --database "$db&schema=one_node" --label journallog-postgres-1-node "$@"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ports=("$(free_port)" "$(free_port)")
front="$(free_port)"
for k in 0 1; do
  "$jlog" serve --database "$db&schema=two_nodes" --listen "127.0.0.1:${ports[$k]}" --rate-limit 0 --compact-every 0 2>>"$work/node$k.log" &
  nodes+=($!)
  for _ in $(seq 1 400); do curl -sf "http://127.0.0.1:${ports[$k]}/v1/health" >/dev/null 2>&1 && break; sleep 0.05; done
done
bash scripts/nginx-front.sh start "$work/nginx" "$front" "${ports[0]}" "${ports[1]}"
"$load" --jlog "$jlog" --database "$db&schema=two_nodes" --url "http://127.0.0.1:$front" --label journallog-postgres-2-nodes-nginx "$@"
loadavg end
