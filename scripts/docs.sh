#!/usr/bin/env bash
# The documentation in DocC form, with the toolchain's docc, for every library product (the root
# package's and Integrations/'), one archive (see scripts/docs.py for the details):
#
#   scripts/docs.sh            # check the articles are current, build every module's documentation
#                              # (warnings are errors), merge it, fail on an undocumented public symbol
#   scripts/docs.sh --update   # remake Sources/Recall/Recall.docc/Articles from README.md and docs/*.md
#
# Output: .build/docs/Recall.doccarchive (static hosting; `python3 -m http.server` in it serves it).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/docs.py "$@"
