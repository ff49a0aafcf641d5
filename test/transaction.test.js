// A transaction's connection breaking under it (the server ended its
// backend, or went away) fails that work with the error, and nothing else:
// not the process, not the pool's other connections.
import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { withTransaction } from '../lib/store/transaction.js'
import { createTestDatabase } from './helpers/db.js'

let database
before(async () => { database = await createTestDatabase() })
after(async () => { await database?.drop() })

test('a connection ended by the server in the middle of a transaction fails the work, not the process; the pool goes on', async () => {
  const pids = new Set()
  const work = withTransaction(database.pool, async (client) => {
    const { rows: [me] } = await client.query('SELECT pg_backend_pid() AS pid')
    pids.add(me.pid)
    // Idle in the transaction while the server ends this backend, as an
    // import between its statements does when PostgreSQL stops.
    for (let i = 0; i < 100 && pids.has(me.pid); i++) await sleep(50)
    await client.query('SELECT 1')
  })
  while (!pids.size) await sleep(10)
  const [pid] = pids
  const { rows: [ended] } = await database.pool.query('SELECT pg_terminate_backend($1) AS ok', [pid])
  assert.equal(ended.ok, true)
  await sleep(200) // the client hears of it before the work's next statement
  pids.delete(pid)
  await assert.rejects(work, /terminat|Connection terminated|not queryable/i)
  const { rows: [one] } = await database.pool.query('SELECT 1 AS one')
  assert.equal(one.one, 1, 'the pool still answers')
  assert.equal((await withTransaction(database.pool, async (client) => (await client.query('SELECT 2 AS two')).rows[0].two)), 2, 'and a new transaction runs')
})
