#!/usr/bin/env bash
# Runs the concurrency-heavy tests under ThreadSanitizer. Usage: scripts/tsan.sh [filter]
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-StressTests|CacheValidationTests|WriteBehindTests|PipelineTests|RetryPolicyTests|StorageTests|ConfidentialityTests|TransportSafetyTests|URLSessionTransportTests|PerCoreCopiesTests|HeldFileTests|ReadWriteLockedTests|ResponseBodyTests|StreamingTests|TimedBodyTests|CorelibsPacingTests|SpillingWriterTests|RecallURLProtocolTests}"
# Synchronization.Mutex is futexes ThreadSanitizer cannot see: every access it guards reads as a
# race. Shared state in Recall and its tests goes through Locked (a pthread mutex) instead.
if grep -rnE '\bMutex *[<(]' Sources Tests --include='*.swift' | grep -v -e '/DocSnippets/' -e 'Locked.swift'; then
    echo "Use Locked, not Synchronization.Mutex, where ThreadSanitizer runs (the lines above)" >&2
    exit 1
fi
swift test --sanitize=thread --scratch-path .build-tsan --filter "$filter" 2>&1 | tee /tmp/recall-tsan.log
if grep -q "WARNING: ThreadSanitizer" /tmp/recall-tsan.log; then
    echo "ThreadSanitizer reported data races (see above)" >&2
    exit 1
fi
