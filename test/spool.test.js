// The agent's spool on a real filesystem: what it keeps until the API has
// the results, what it sets aside, and what it leaves for the next flush.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createSpool } from '../agents/spool.js'

test('an entry is kept whole until removed; a corrupt one is set aside, one that cannot be read now is left for the next flush', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lens-spool-'))
  try {
    const spool = createSpool(dir)
    await spool.put(1, { results: [{ mode: 'h2' }] })
    await spool.put(2, { results: [{ mode: 'h3' }] })
    assert.deepEqual(fs.readdirSync(dir).sort(), ['job-1.json', 'job-2.json'], 'no temporary file left')
    // Half a file, as a disk that filled up would leave it.
    fs.writeFileSync(path.join(dir, 'job-3.json'), '{"results": [')
    // Not readable as a file now (here: a folder in its place).
    fs.mkdirSync(path.join(dir, 'job-4.json'))
    assert.deepEqual((await spool.list()).map((e) => [e.jobId, e.payload.results[0].mode]), [[1, 'h2'], [2, 'h3']])
    assert.ok(fs.existsSync(path.join(dir, 'job-3.json.corrupt')), 'the corrupt entry is kept aside for inspection')
    assert.ok(fs.existsSync(path.join(dir, 'job-4.json')), 'the unreadable entry stays where it is')
    await spool.remove(1)
    assert.deepEqual((await spool.list()).map((e) => e.jobId), [2])
    // An entry that cannot be written (here: its name taken by a folder; a
    // full disk fails the same way) is an error, and leaves no temporary file.
    fs.mkdirSync(path.join(dir, 'job-5.json', 'x'), { recursive: true })
    await assert.rejects(spool.put(5, { results: [] }))
    assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')), [])
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
