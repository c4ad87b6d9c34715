#!/usr/bin/env bash
# The test command: installs what is missing, builds everything (library, jlog, jlog-bench,
# tests) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build --build-tests
swift test --skip-build
