#!/usr/bin/env bash
# Runs the public HTTP-cache conformance suite (https://github.com/http-tests/cache-tests, a checkout
# of it at SUITE) through Recall: the suite's server on 127.0.0.1:8000, the ConformanceProxy of
# Integrations/RecallAsyncHTTPClient on 127.0.0.1:8001 in front of it (an HTTPCache of the AUDIENCE
# over the TRANSPORT), the suite's client against the proxy. Prints the summary of
# scripts/cache-tests-summary.mjs (for `shared`, on the shared-cache profile) and leaves the results in OUT. Needs node (18 or later); the
# suite's interim-response tests also need its `undici` package (npm install in SUITE).
#
#     scripts/cache-tests.sh SUITE [one-user|many-users|shared] [ahc|urlsession] [OUT]
#
# See docs/conformance.md for what it measures and the results.
set -euo pipefail
suite=$(cd "${1:?usage: scripts/cache-tests.sh SUITE [one-user|many-users|shared] [ahc|urlsession] [OUT]}" && pwd)
audience=${2:-many-users}
transport=${3:-ahc}
out=${4:-$(mktemp -t cache-tests-XXXXXX.json)}
root=$(cd "$(dirname "$0")/.." && pwd)
package="$root/Integrations/RecallAsyncHTTPClient"

swift build --package-path "$package" --product ConformanceProxy >&2
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
(cd "$suite" && npm_package_config_protocol=http npm_package_config_port=8000 \
    npm_package_config_pidfile="$(mktemp -t cache-tests-server-XXXXXX.pid)" exec node test-engine/server/server.mjs) >&2 &
pids+=($!)
"$package/.build/debug/ConformanceProxy" 8001 http://127.0.0.1:8000 "$audience" "$transport" >&2 &
pids+=($!)
for _ in $(seq 50); do
    curl -s -o /dev/null http://127.0.0.1:8000/ && curl -s -o /dev/null http://127.0.0.1:8001/ && break
    sleep 0.2
done
(cd "$suite" && npm run --silent cli --base=http://127.0.0.1:8001) > "$out"
echo "results: $out ($audience, $transport)"
# A shared cache is scored on the shared-cache profile, as cache-tests.fyi's proxies are.
if [ "$audience" = shared ]; then
    node "$root/scripts/cache-tests-summary.mjs" "$suite" "$out" --profile shared
else
    node "$root/scripts/cache-tests-summary.mjs" "$suite" "$out"
fi
