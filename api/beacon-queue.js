// Beacons are stored before they are acknowledged, in batches: each request
// waits for the commit of the batch that holds its beacon (group commit).
// While a batch is being written the next ones gather, so batches grow with
// the load and an idle server writes a lone beacon at once; no timer holds a
// beacon back. Why not answer first and write later: a browser never reads
// the answer to sendBeacon, so acknowledging early would buy nothing but a
// loss window, and "nothing accepted is lost" would no longer hold. A beacon
// whose batch fails is answered 503 and is not stored (a browser does not
// resend it; the count of those is h3lens_rum_beacons_total{outcome="failed"}).
//
// Three writers: while one batch waits for its commit (a disk flush, tens
// of ms on a busy machine), the next ones are written; more only held
// connections the API's other routes need (bench/rum-ingest.js).
//
// Bounded: past `maxPending` beacons waiting or being written, new ones are
// refused with 503 at once rather than queued without end (a flood that got
// past the rate limits, or a database that has slowed down).
import { insertBeacons, beaconKey } from '../lib/store/rum-beacons.js'

export class QueueFullError extends Error {
  constructor () {
    super('h3lens is storing as many beacons as it can; this one was not stored')
    this.statusCode = 503
    this.code = 'overloaded'
  }
}

/**
 * @param {{ db: import('pg').Pool, maxPending?: number, maxBatch?: number, writers?: number,
 *   insert?: typeof insertBeacons }} deps writers: batches written at once (each on its own connection)
 */
export function createBeaconQueue ({ db, maxPending = 20_000, maxBatch = 1000, writers = 3, insert = insertBeacons }) {
  /** @type {{ row: Record<string, any>, resolve: (v: 'stored' | 'duplicate') => void, reject: (e: any) => void }[]} */
  const waiting = []
  let writing = 0
  let inFlight = 0
  let scheduled = false
  /** @type {Set<Promise<void>>} */
  const running = new Set()

  async function write (/** @type {typeof waiting} */ batch) {
    try {
      const inserted = await insert(db, batch.map((w) => w.row))
      for (const w of batch) {
        const key = beaconKey(/** @type {{ site_id: number, view_id: string, time: Date }} */ (w.row))
        // Within a batch, the first of two identical beacons is the one stored.
        w.resolve(inserted.delete(key) ? 'stored' : 'duplicate')
      }
    } catch (err) {
      for (const w of batch) w.reject(err)
    } finally {
      inFlight -= batch.length
    }
  }

  function kick () {
    scheduled = false
    while (writing < writers && waiting.length) {
      const batch = waiting.splice(0, maxBatch)
      writing++
      const p = write(batch).finally(() => {
        writing--
        running.delete(p)
        if (waiting.length) schedule()
      })
      running.add(p)
    }
  }

  // The beacons of one turn of the event loop go together.
  function schedule () {
    if (scheduled) return
    scheduled = true
    setImmediate(kick)
  }

  return {
    /**
     * @param {Record<string, any>} row
     * @returns {Promise<'stored' | 'duplicate'>} once its batch is committed
     */
    add (row) {
      if (inFlight >= maxPending) return Promise.reject(new QueueFullError())
      inFlight++
      return new Promise((resolve, reject) => {
        waiting.push({ row, resolve, reject })
        schedule()
      })
    },
    /** Beacons waiting or being written. */
    get pending () { return inFlight },
    /** Wait until every beacon handed over so far is written (or failed). */
    async drain () {
      while (waiting.length || running.size) {
        if (waiting.length) kick()
        await Promise.all(running)
      }
    }
  }
}
