#!/usr/bin/env bash
# Runs the concurrency-heavy tests under ThreadSanitizer. Usage: scripts/tsan.sh [filter]
#
# Without a filter, in three runs of the test binary — streaming bodies, the transports, then the
# cache, storages and locks — so that fewer suites share the two cores at once: under the sanitizer a
# test runs many times slower, and all of them at once brought the slowest near their time limits.
set -euo pipefail
cd "$(dirname "$0")/.."
# Synchronization.Mutex is futexes ThreadSanitizer cannot see: every access it guards reads as a
# race. Shared state in Recall and its tests goes through Locked (a pthread mutex) instead.
if grep -rnE '\bMutex *[<(]' Sources Tests --include='*.swift' | grep -v -e '/DocSnippets/' -e 'Locked.swift'; then
    echo "Use Locked, not Synchronization.Mutex, where ThreadSanitizer runs (the lines above)" >&2
    exit 1
fi
if [ $# -gt 0 ]; then
    filters=("$1")
else
    filters=(
        "StreamingTests|SpillingWriterTests"
        "URLSessionTransportTests|TimedBodyTests|CorelibsPacingTests|RecallURLProtocolTests|TransportSafetyTests|ResponseBodyTests"
        "StressTests|CacheValidationTests|WriteBehindTests|PipelineTests|RetryPolicyTests|StorageTests|ConfidentialityTests|PerCoreCopiesTests|HeldFileTests|LockedTests"
    )
fi
: > /tmp/recall-tsan.log
status=0
for filter in "${filters[@]}"; do
    swift test --sanitize=thread --scratch-path .build-tsan --filter "$filter" 2>&1 | tee -a /tmp/recall-tsan.log || status=1
done
if grep -q "WARNING: ThreadSanitizer" /tmp/recall-tsan.log; then
    echo "ThreadSanitizer reported data races (see above)" >&2
    exit 1
fi
exit $status
