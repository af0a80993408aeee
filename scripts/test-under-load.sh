#!/usr/bin/env bash
# Runs the root package's whole test suite (`swift test`) while every core is kept busy, several
# passes in a row: a test that races real time against other work, or against a manual clock,
# fails here long before it fails on a loaded CI machine.
#
#   scripts/test-under-load.sh [--passes N] [--no-build] [-- SWIFT-TEST-ARGUMENTS...]
#
#   --passes N    how many passes of the suite (default 3); all are run, failed or not
#   --no-build    skip `swift build --build-tests` (the tests are already built)
#   -- ARGS       passed on to every `swift test` (e.g. -- --filter CircuitBreakerTests)
#
# The tests are built first, without the load; then one busy loop (`yes > /dev/null`) per core
# (`nproc`) runs for as long as the passes do, and is stopped on exit, also after a failure or an
# interrupt. Each pass's output goes to the terminal and to .build/test-under-load/pass-N.log.
# Exits 0 when every pass passed; otherwise names the passes that failed and exits 1.
set -uo pipefail

passes=3
build=1
test_arguments=()

usage() {
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case "$1" in
        --passes)
            [ $# -ge 2 ] || { echo "test-under-load: --passes needs a number" >&2; exit 2; }
            passes="$2"
            shift 2
            ;;
        --passes=*)
            passes="${1#--passes=}"
            shift
            ;;
        --no-build)
            build=0
            shift
            ;;
        -h|--help)
            usage
            exit 0
            ;;
        --)
            shift
            test_arguments=("$@")
            break
            ;;
        *)
            echo "test-under-load: unknown argument '$1' (see --help)" >&2
            exit 2
            ;;
    esac
done

if ! [[ "$passes" =~ ^[0-9]+$ ]] || [ "$passes" -lt 1 ]; then
    echo "test-under-load: --passes takes a whole number from 1 up, not '$passes'" >&2
    exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2
logs="$root/.build/test-under-load"
mkdir -p "$logs" || exit 2

# Job control: every background job (each busy loop, each pass) gets a process group of its
# own, so that a pass can be stopped whole (swift test and what it started) by its id.
set -m

load_pids=()
test_job=""

stop_tests() {
    if [ -n "$test_job" ]; then
        kill -TERM -- "-$test_job" 2>/dev/null
        wait "$test_job" 2>/dev/null
        test_job=""
    fi
}

stop_load() {
    if [ ${#load_pids[@]} -gt 0 ]; then
        kill "${load_pids[@]}" 2>/dev/null
        wait "${load_pids[@]}" 2>/dev/null
        load_pids=()
        echo "test-under-load: load stopped"
    fi
}

trap 'stop_tests; stop_load' EXIT
trap 'echo "test-under-load: interrupted" >&2; exit 130' INT
trap 'echo "test-under-load: terminated" >&2; exit 143' TERM
trap 'echo "test-under-load: hung up" >&2; exit 129' HUP

if [ "$build" -eq 1 ]; then
    echo "test-under-load: building the tests (without load)"
    if ! swift build --build-tests; then
        echo "test-under-load: the build failed" >&2
        exit 1
    fi
fi

cores="$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
echo "test-under-load: starting $cores busy loop(s), one per core"
for _ in $(seq "$cores"); do
    yes > /dev/null &
    load_pids+=("$!")
done

passed=0
failed=0
failed_passes=()
for pass in $(seq "$passes"); do
    log="$logs/pass-$pass.log"
    echo "test-under-load: pass $pass of $passes under load (log: $log)"
    # In the background and waited for, so that an interrupt is handled at once (pipefail:
    # the status is swift test's).
    ( swift test --skip-build ${test_arguments[@]+"${test_arguments[@]}"} < /dev/null 2>&1 | tee "$log" ) &
    test_job=$!
    wait "$test_job"
    status=$?
    test_job=""
    if [ "$status" -eq 0 ]; then
        passed=$((passed + 1))
        echo "test-under-load: pass $pass passed"
    else
        failed=$((failed + 1))
        failed_passes+=("$pass")
        echo "test-under-load: pass $pass FAILED (swift test exited $status; log: $log)" >&2
        # Swift Testing marks a failed test or issue with ✘; XCTest says "error:".
        grep -E '✘|error:' "$log" | head -n 40 >&2
    fi
done

stop_load
if [ "$failed" -gt 0 ]; then
    echo "test-under-load: failed pass(es): ${failed_passes[*]}" >&2
fi
echo "under load: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
