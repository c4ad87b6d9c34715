#!/usr/bin/env bash
# The server's load test (issue 20; Benchmarks/README.md, "Server"): builds jlog and jlog-load in
# release mode, then jlog-load starts `jlog serve` on a fresh store and drives it over loopback
# with concurrent devices, beside the ceiling of Hummingbird's trivial endpoint on the same
# server, alternating the two. Arguments go to jlog-load (default: 200 devices, 50 families,
# 3 runs of 10 s each way). JSON lines on stdout, a summary on stderr. JLOG_SCRATCH names the
# SwiftPM scratch path to build in (default .build-bench; a first release build of the server's
# dependencies takes over 20 minutes on two cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
scratch="${JLOG_SCRATCH:-.build-bench}"
swift build -c release --scratch-path "$scratch" --product jlog >/dev/null
swift build -c release --scratch-path "$scratch" --product jlog-load >/dev/null
echo "{\"name\":\"load_average\",\"system\":\"machine\",\"unit\":\"1-minute load\",\"median\":$(cut -d' ' -f1 /proc/loadavg),\"at\":\"start\"}"
"$scratch/release/jlog-load" --jlog "$scratch/release/jlog" "$@"
echo "{\"name\":\"load_average\",\"system\":\"machine\",\"unit\":\"1-minute load\",\"median\":$(cut -d' ' -f1 /proc/loadavg),\"at\":\"end\"}"
