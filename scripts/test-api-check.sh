#!/usr/bin/env bash
# Tests scripts/api-breaks-listed.py (the CHANGELOG half of scripts/check-api.sh) on fixed
# reports: a break listed under Unreleased → Breaking passes, by its name or its type's; one
# listed only in an older release's Breaking, under Added, or nowhere fails and is named.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat > "$work/report" <<'REPORT'
No breaking changes detected in RecallTesting

2 breaking changes detected in Recall:
  💔 API breakage: func Pipeline.send(_:) has return type change from Recall.Response to Recall.RecallResponse
  💔 API breakage: accessor CacheEntry.headers.Get() has return type change from Recall.HTTPHeaders to Recall.HeaderFields
REPORT

changelog() {   # $1: what Unreleased → Breaking lists; $2: what Unreleased → Added lists; $3: an older release's Breaking
    printf '# Changelog\n\n## Unreleased\n\n### Breaking\n%s\n\n### Added\n%s\n\n## 1.0.0\n\n### Breaking\n%s\n' "$1" "$2" "$3" > "$work/CHANGELOG.md"
}
expect() {   # $1: pass|fail; $2: what the case shows; $3: a text the failure must name (fail only)
    if python3 scripts/api-breaks-listed.py "$work/report" "$work/CHANGELOG.md" > "$work/out" 2>&1; then
        outcome=pass
    else
        outcome=fail
    fi
    if [ "$outcome" != "$1" ] || { [ "$1" = fail ] && ! grep -qF "$3" "$work/out"; }; then
        echo "api check self-test: $2: expected $1${3:+ naming '$3'}, got $outcome:" >&2
        cat "$work/out" >&2
        exit 1
    fi
}

changelog '- `Pipeline.send(_:)` returns `RecallResponse`; `CacheEntry.headers` is `HeaderFields`.' '' ''
expect pass "both listed by their declarations"
changelog '- `Pipeline` and `CacheEntry`: the new names.' '' ''
expect pass "both listed by their types"
changelog '- `Pipeline.send(_:)` returns `RecallResponse`.' '- `CacheEntry.headers` is `HeaderFields`.' ''
expect fail "one listed under Added only" "CacheEntry.headers"
changelog '- `Pipeline.send(_:)` returns `RecallResponse`.' '' '- `CacheEntry.headers` changed.'
expect fail "one listed under an older release only" "CacheEntry.headers"
changelog '- `PipelineBuilder` is gone; `CacheEntryHeaders` too.' '' ''
expect fail "a longer name that starts with the type's" "Pipeline.send"
printf 'No breaking changes detected in Recall\n' > "$work/report"
changelog '' '' ''
expect pass "no breaks, nothing listed"
echo "api check self-test: 6 cases passed"
