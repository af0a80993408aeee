// Summarizes a results file of the HTTP-cache conformance suite (github.com/http-tests/cache-tests)
// by kind of test, and lists every test that did not pass, with the suite's own verdicts.
//
//     node scripts/cache-tests-summary.mjs /path/to/cache-tests results.json [--profile shared]
//
// With `--profile shared`, only the shared-cache profile counts: every test that is neither
// browser-only nor CDN-only, minus the interim-response ones (which need the suite's `undici`)
// — 149 required and 95 optimal at cache-tests b55b8bd, the tests cache-tests.fyi's reverse
// proxies are scored on (a test whose dependency fails counts as failed, as the site counts it).
import fs from 'fs'
import path from 'path'
import { pathToFileURL } from 'url'

const [suiteDir, resultsFile, ...options] = process.argv.slice(2)
const shared = options.join(' ') === '--profile shared'
const inProfile = test => !shared || (!test.browser_only && !test.cdn_only && !test.id.startsWith('interim-'))
const { default: tests } = await import(pathToFileURL(path.join(suiteDir, 'tests/index.mjs')))
const { determineTestResult, resultTypes } = await import(pathToFileURL(path.join(suiteDir, 'test-engine/lib/results.mjs')))
const results = JSON.parse(fs.readFileSync(resultsFile))
const counts = {}
const others = []
for (const suite of tests) {
  for (const test of suite.tests) {
    if (!inProfile(test)) continue
    const kind = test.kind || 'required'
    const verdict = Object.keys(resultTypes).find(name => resultTypes[name] === determineTestResult(tests, test.id, results))
    counts[kind] = counts[kind] || {}
    counts[kind][verdict] = (counts[kind][verdict] || 0) + 1
    if (verdict !== 'pass' && verdict !== 'yes') others.push(`${kind}\t${verdict}\t${test.id}\t${JSON.stringify(results[test.id])}`)
  }
}
if (shared) console.log('profile: shared (neither browser-only nor CDN-only, no interim responses)')
for (const kind of Object.keys(counts)) console.log(`${kind}: ${JSON.stringify(counts[kind])}`)
console.log(others.join('\n'))
