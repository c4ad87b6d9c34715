#!/usr/bin/env bash
# Installs what JournalLog needs on a fresh Debian/Ubuntu machine: liblz4 (batch and snapshot
# codec), SQLite headers (benchmark baseline), pkg-config and python3 (the demo and kill -9
# scripts), PostgreSQL's server (the PostgreSQL backend's tests start a private cluster of
# their own; nothing is started here), and nginx with curl (two nodes behind it, nodes-kill9.sh).
# Swift itself must be on PATH.
set -euo pipefail
missing=()
dpkg -s liblz4-dev >/dev/null 2>&1 || missing+=(liblz4-dev)
dpkg -s libsqlite3-dev >/dev/null 2>&1 || missing+=(libsqlite3-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v python3 >/dev/null 2>&1 || missing+=(python3)   # demo.sh and kill9.sh read JSON with it
# The PostgreSQL backend's tests run a private cluster (scripts/postgres.sh): the server's binaries only.
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
# Two nodes over PostgreSQL behind a real load balancer (scripts/nodes-kill9.sh); curl to poll them.
[ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null 2>&1 || { echo "setup: swift is not on PATH (install Swift 6.x)" >&2; exit 1; }
