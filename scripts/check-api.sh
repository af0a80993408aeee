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

python3 - "$report" CHANGELOG.md <<'PY'
import re, sys

report, changelog = open(sys.argv[1], encoding="utf-8").read(), open(sys.argv[2], encoding="utf-8").read()

# The "Unreleased" section, and within it every "### Breaking" subsection.
unreleased = re.search(r"^## Unreleased\s*$(.*?)(?=^## |\Z)", changelog, re.M | re.S)
breaking = "" if not unreleased else "\n".join(
    m.group(1) for m in re.finditer(r"^### Breaking\s*$(.*?)(?=^### |^## |\Z)", unreleased.group(1), re.M | re.S))

def listed(name):
    """Whether `name` (A.b.c) or one of its enclosing names (A.b, A) is named in the Breaking text."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if re.search(r"(?<![\w.])" + re.escape(candidate) + r"(?![\w])", breaking):
            return True
    return False

unlisted = []
for line in report.splitlines():
    found = re.search(r"API breakage: (\S+) (.+?) has ", line)
    if not found:
        continue
    declaration = found.group(2)
    # `func A.b(_:c:)` → A.b; `accessor A.b.Get()` → A.b; `var A.b` → A.b
    name = re.sub(r"\(.*$", "", declaration).strip()
    name = re.sub(r"\.(Get|Set|Modify|Read|_modify|_read|init)$", "", name)
    if not listed(name):
        unlisted.append(line.strip())

if unlisted:
    print("\nerror: breaking API changes that CHANGELOG.md's Unreleased section does not list under "
          "\"### Breaking\" (name the declaration or its type there, with how to upgrade):", file=sys.stderr)
    for line in unlisted:
        print("  " + line, file=sys.stderr)
    sys.exit(1)
breaks = sum(1 for line in report.splitlines() if "API breakage:" in line)
print(f"API check: {breaks} breaking change(s), each listed under Breaking in CHANGELOG.md" if breaks
      else "API check: no breaking changes")
PY
