// One transaction on one pooled connection: BEGIN, the work, COMMIT; on any
// error ROLLBACK and rethrow. The connection goes back to the pool either
// way, or, when it broke, is closed instead. Every multi-statement write in
// lib/store goes through here.

/**
 * @template T
 * @param {import('pg').Pool} db
 * @param {(client: import('pg').PoolClient) => Promise<T>} fn
 * @param {{ begin?: string }} [opts] the BEGIN statement, for an isolation level (`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
 * @returns {Promise<T>}
 */
export async function withTransaction (db, fn, { begin = 'BEGIN' } = {}) {
  const client = await db.connect()
  // A connection that breaks while it is checked out (the server went away,
  // or ended this backend) emits 'error' on its client, which the pool
  // listens for only while the client is idle: unheard, it would end the
  // process. The statement under way fails with it, and so does the work.
  /** @type {Error | null} */
  let broken = null
  const onError = (/** @type {Error} */ err) => { broken = err }
  client.on('error', onError)
  try {
    await client.query(begin)
    const out = await fn(client)
    await client.query('COMMIT')
    return out
  } catch (err) {
    // A failed ROLLBACK (the connection broke) must not hide the error that caused it.
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.off('error', onError)
    client.release(broken ?? undefined)
  }
}
