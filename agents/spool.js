// Results are written here before they are submitted, and removed only once
// the API has acknowledged them, so an API outage or an agent restart loses
// nothing. One file per job; writes go through a temp file and rename so a
// crash never leaves half a file.
import fs from 'node:fs/promises'
import path from 'node:path'

/**
 * @param {string} dir
 * @param {{ log?: import('pino').Logger }} [opts]
 */
export function createSpool (dir, { log } = {}) {
  const fileOf = (/** @type {number} */ jobId) => path.join(dir, `job-${jobId}.json`)
  /** @returns {Promise<number[]>} the rounds in the spool, without reading their results */
  const jobIds = async () => {
    const names = await fs.readdir(dir).catch(() => /** @type {string[]} */ ([]))
    return names.flatMap((name) => {
      const m = /^job-(\d+)\.json$/.exec(name)
      return m ? [Number(m[1])] : []
    })
  }
  return {
    dir,
    /** @param {number} jobId @param {object} payload */
    async put (jobId, payload) {
      await fs.mkdir(dir, { recursive: true })
      const tmp = `${fileOf(jobId)}.${process.pid}.tmp`
      // On disk before it is renamed into place: after a power cut the
      // entry is whole or absent (its round then runs again), never empty.
      const handle = await fs.open(tmp, 'w')
      try {
        try {
          await handle.writeFile(JSON.stringify(payload))
          await handle.sync()
        } finally {
          await handle.close()
        }
        await fs.rename(tmp, fileOf(jobId))
      } catch (err) {
        // A full disk: the half-written temp file goes, the error is the caller's.
        await fs.rm(tmp, { force: true })
        throw err
      }
    },
    /** @param {number} jobId */
    async remove (jobId) {
      await fs.rm(fileOf(jobId), { force: true })
    },
    jobIds,
    /** @returns {Promise<{ jobId: number, payload: any, bytes: number }[]>} oldest first; bytes: the entry's size as JSON */
    async list () {
      const entries = []
      for (const jobId of await jobIds()) {
        const file = fileOf(jobId)
        let stat, text
        try {
          [stat, text] = await Promise.all([fs.stat(file), fs.readFile(file, 'utf8')])
        } catch {
          // Gone since the listing (submitted meanwhile), or not readable
          // now (too many open files): left as it is, for the next flush.
          continue
        }
        try {
          entries.push({ jobId, payload: JSON.parse(text), bytes: stat.size, mtime: stat.mtimeMs })
        } catch {
          // A corrupt file cannot be submitted; keep it aside for inspection.
          await fs.rename(file, `${file}.corrupt`).catch(() => {})
          log?.error({ job: jobId, file: `${file}.corrupt` }, 'a spooled round\'s results could not be read; set aside, not submitted: the round is measured again')
        }
      }
      return entries.sort((a, b) => a.mtime - b.mtime).map(({ jobId, payload, bytes }) => ({ jobId, payload, bytes }))
    }
  }
}
