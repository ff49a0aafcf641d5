// One transaction on one pooled connection: BEGIN, the work, COMMIT; on any
// error ROLLBACK and rethrow. The connection goes back to the pool either
// way. Every multi-statement write in lib/store goes through here.

/**
 * @template T
 * @param {import('pg').Pool} db
 * @param {(client: import('pg').PoolClient) => Promise<T>} fn
 * @param {{ begin?: string }} [opts] the BEGIN statement, for an isolation level (`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
 * @returns {Promise<T>}
 */
export async function withTransaction (db, fn, { begin = 'BEGIN' } = {}) {
  const client = await db.connect()
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
    client.release()
  }
}
