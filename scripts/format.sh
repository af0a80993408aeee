#!/usr/bin/env bash
# Formats every Swift file of the repository with the toolchain's swift-format and the
# .swift-format at the root; `--lint` only checks (warnings are errors: .ci/run runs it).
# Left as they are: generated code (`Generated/`), and the docs' snippet files (`DocSnippets/`),
# which must hold the docs' code blocks word for word.
#
#   scripts/format.sh          # format in place
#   scripts/format.sh --lint   # check
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.swift' | grep -v -e '/Generated/' -e '/DocSnippets/')
if [ "${1:-}" = "--lint" ]; then
    swift format lint --strict --parallel "${files[@]}"
    echo "swift-format: ${#files[@]} files formatted as .swift-format says"
else
    swift format format --in-place --parallel "${files[@]}"
fi
