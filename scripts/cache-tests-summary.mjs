// Summarizes a results file of the HTTP-cache conformance suite (github.com/http-tests/cache-tests)
// by kind of test, and lists every test that did not pass, with the suite's own verdicts.
//
//     node scripts/cache-tests-summary.mjs /path/to/cache-tests results.json
import fs from 'fs'
import path from 'path'
import { pathToFileURL } from 'url'

const [suiteDir, resultsFile] = process.argv.slice(2)
const { default: tests } = await import(pathToFileURL(path.join(suiteDir, 'tests/index.mjs')))
const { determineTestResult, resultTypes } = await import(pathToFileURL(path.join(suiteDir, 'test-engine/lib/results.mjs')))
const results = JSON.parse(fs.readFileSync(resultsFile))
const counts = {}
const others = []
for (const suite of tests) {
  for (const test of suite.tests) {
    const kind = test.kind || 'required'
    const verdict = Object.keys(resultTypes).find(name => resultTypes[name] === determineTestResult(tests, test.id, results))
    counts[kind] = counts[kind] || {}
    counts[kind][verdict] = (counts[kind][verdict] || 0) + 1
    if (verdict !== 'pass' && verdict !== 'yes') others.push(`${kind}\t${verdict}\t${test.id}\t${JSON.stringify(results[test.id])}`)
  }
}
for (const kind of Object.keys(counts)) console.log(`${kind}: ${JSON.stringify(counts[kind])}`)
console.log(others.join('\n'))
