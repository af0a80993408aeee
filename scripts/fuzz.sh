#!/usr/bin/env bash
# Property-based fuzzing of every parser of untrusted text (Cache-Control, HTTP dates,
# Retry-After, Vary, cache-key canonicalization), with many random inputs each.
# Usage: scripts/fuzz.sh [iterations per parser, default 200000]
set -euo pipefail
cd "$(dirname "$0")/.."
export RECALL_FUZZ_ITERATIONS="${1:-200000}"
echo "== $RECALL_FUZZ_ITERATIONS inputs per parser"
time swift test --filter FuzzTests
