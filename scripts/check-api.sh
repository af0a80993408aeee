#!/usr/bin/env bash
# Compares the public API of the root package's library products with the baseline commit named
# in .api-baseline (the last release; see CONTRIBUTING.md, "Releasing"), using the toolchain's
# `swift package diagnose-api-breaking-changes`. A breaking change fails unless CHANGELOG.md's
# "Unreleased" section lists it under a "### Breaking" heading: the declaration, or a type it
# belongs to, named there (`MockTransport.send` or `MockTransport` both cover
# `func MockTransport.send(_:)`).
#
#   scripts/check-api.sh              # against .api-baseline
#   scripts/check-api.sh --baseline REV   # against another commit (to try the check itself)
set -euo pipefail
cd "$(dirname "$0")/.."

baseline=""
if [ "${1:-}" = "--baseline" ]; then
    baseline="${2:?--baseline needs a commit}"
else
    baseline="$(grep -Ev '^\s*(#|$)' .api-baseline | head -n 1 | tr -d '[:space:]')"
fi
if [ -z "$baseline" ]; then
    echo "error: .api-baseline names no commit" >&2
    exit 1
fi
if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
    echo "error: the API baseline $baseline is not in this clone's history (a shallow clone? fetch it: git fetch --unshallow)" >&2
    exit 1
fi

report="$(mktemp)"
trap 'rm -f "$report"' EXIT
echo "API of the root package's library products against $baseline"
# Exit status 1 means breaks were found (checked below against the CHANGELOG); anything the
# tool prints besides its build log is shown.
set +e
swift package diagnose-api-breaking-changes "$baseline" >"$report" 2>&1
status=$?
set -e
grep -Ev '^\[[0-9]+/[0-9]+\]|^Building for|^Build complete' "$report" || true
if [ "$status" -ne 0 ] && ! grep -q "API breakage:" "$report"; then
    echo "error: diagnose-api-breaking-changes failed (status $status) without a report of breaks" >&2
    exit 1
fi

python3 scripts/api-breaks-listed.py "$report" CHANGELOG.md
