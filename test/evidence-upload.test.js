// An agent's evidence uploads (net logs, filmstrips) are not spooled with
// the round's results: a moment when the API cannot take them gets two more
// tries, any other answer is final. Over real HTTP, against a server that
// answers as the API does in each case.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { putEvidence } from '../agents/http.js'
import { freePort } from '../dev/free-port.js'

/** A server answering each PUT with the next status of `statuses` (then 200), counting the requests. */
async function answering (/** @type {number[]} */ statuses) {
  const seen = []
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const status = statuses[seen.length] ?? 200
      seen.push(req.method)
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(status === 200 ? { stored: true } : { message: `answered ${status}` }))
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  const url = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`
  return { url, seen, close: () => new Promise((resolve) => server.close(resolve)) }
}

const put = (/** @type {string} */ url) => putEvidence(`${url}/api/v1/agent/jobs/1/netlog`, {
  what: 'net log upload', apiUrl: url, headers: { 'content-type': 'application/gzip' }, body: Buffer.from('x'), timeoutMs: 5000, retryMs: [20, 20]
})

test('a 503 and a 429 are tried again and the third try is stored; a 400 is final at once; three 503s fail with the last answer', async () => {
  const later = await answering([503, 429])
  assert.deepEqual(await put(later.url), { stored: true })
  assert.equal(later.seen.length, 3)
  await later.close()

  const refused = await answering([400])
  await assert.rejects(put(refused.url), /^Error: net log upload → 400: answered 400$/)
  assert.equal(refused.seen.length, 1, 'a refusal is not sent again')
  await refused.close()

  const down = await answering([503, 503, 503])
  await assert.rejects(put(down.url), /net log upload → 503: answered 503/)
  assert.equal(down.seen.length, 3)
  await down.close()
})

test('an API that cannot be reached is tried three times, then named', async () => {
  const url = `http://127.0.0.1:${await freePort()}`
  await assert.rejects(put(url), /^Error: net log upload: API unreachable at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED$/)
})
