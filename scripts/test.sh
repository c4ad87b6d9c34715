#!/usr/bin/env bash
# The test command: installs what is missing, builds everything (library, jlog, jlog-bench,
# tests), starts a private PostgreSQL cluster for the PostgreSQL backend's tests (its own
# directory, a Unix socket, no TCP; stopped and removed at the end, scripts/postgres.sh) and runs
# the whole test suite; then the service's suite (JournalSyncTests) again over PostgreSQL: one
# suite, two backends (JLOG_TEST_BACKEND=postgres, each test's service in a schema of its own).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build --build-tests
pg="$(mktemp -d /tmp/jlog-test-pg.XXXXXX)"
trap 'bash scripts/postgres.sh stop "$pg"; rm -rf "$pg"' EXIT
bash scripts/postgres.sh start "$pg" >/dev/null
export JLOG_TEST_POSTGRES="postgres://jlog@/jlog?host=$pg"
swift test --skip-build
echo "== the service's suite over PostgreSQL"
JLOG_TEST_BACKEND=postgres swift test --skip-build --filter JournalSyncTests
