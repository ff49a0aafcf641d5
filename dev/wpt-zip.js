// Zips for the WebPageTest tests and scripts/wpt-screenshot.js: a minimal
// writer (stored or deflated members, any member name, sizes that may lie)
// for hostile cases, and rewriting a recorded wptagent result.zip for the
// test id h3lens issued.
import { deflateRawSync, gunzipSync, gzipSync } from 'node:zlib'
import yauzl from 'yauzl'

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

/** @param {Buffer} buf */
function crc32 (buf) {
  let c = 0xffffffff
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

/**
 * @typedef {{ name: string, data: Buffer, deflate?: boolean, declaredSize?: number }} Member
 */

/**
 * A zip of the given members. declaredSize replaces the true uncompressed
 * size in the headers (a zip that lies about its contents).
 * @param {Member[]} members
 * @returns {Buffer}
 */
export function writeZip (members) {
  const locals = []
  const centrals = []
  let offset = 0
  for (const m of members) {
    const name = Buffer.from(m.name, 'utf8')
    const body = m.deflate ? deflateRawSync(m.data) : m.data
    const size = m.declaredSize ?? m.data.length
    const crc = crc32(m.data)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(0x0800, 6) // UTF-8 names
    local.writeUInt16LE(m.deflate ? 8 : 0, 8)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(body.length, 18)
    local.writeUInt32LE(size, 22)
    local.writeUInt16LE(name.length, 26)
    locals.push(local, name, body)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x0800, 8)
    central.writeUInt16LE(m.deflate ? 8 : 0, 10)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(body.length, 20)
    central.writeUInt32LE(size, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(offset, 42)
    centrals.push(central, name)
    offset += local.length + name.length + body.length
  }
  const dir = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(members.length, 8)
  end.writeUInt16LE(members.length, 10)
  end.writeUInt32LE(dir.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, dir, end])
}

/**
 * Every member of a (trusted, recorded) zip.
 * @param {Buffer} buffer
 * @returns {Promise<Member[]>}
 */
export function readZip (buffer) {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true }, (err, zip) => {
      if (err) return reject(err)
      /** @type {Member[]} */
      const out = []
      zip.on('error', reject)
      zip.on('end', () => resolve(out))
      zip.on('entry', (entry) => zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err)
        /** @type {Buffer[]} */
        const chunks = []
        stream.on('data', (c) => chunks.push(c))
        stream.on('end', () => { out.push({ name: entry.fileName, data: Buffer.concat(chunks) }); zip.readEntry() })
      }))
      zip.readEntry()
    })
  })
}

/**
 * A recorded result.zip as the agent would have made it for another test:
 * the test id inside the devtools requests replaced, and optionally the
 * parsed file changed further (a derived fixture) or members renamed.
 * @param {Buffer} recorded
 * @param {{ testId: string, edit?: (devtools: any) => void, rename?: (name: string) => string, drop?: (name: string) => boolean }} opts
 */
export async function rewriteResultZip (recorded, { testId, edit = () => {}, rename = (n) => n, drop = () => false }) {
  const members = []
  for (const m of await readZip(recorded)) {
    if (drop(m.name)) continue
    let data = m.data
    if (m.name.endsWith('_devtools_requests.json.gz')) {
      const devtools = JSON.parse(gunzipSync(data).toString())
      devtools.pageData.testID = testId
      edit(devtools)
      data = gzipSync(JSON.stringify(devtools))
    }
    members.push({ name: rename(m.name), data })
  }
  return writeZip(members)
}

/**
 * What a wptagent uploads for a script: each recorded step's files under its
 * own prefix (`1_…` for the first, `1_2_…`, `1_3_…` after it). Each step's
 * own page data (`…_page_data.json.gz`) names the step (eventName, the
 * script's setEventName, or `Step_<n>`); its devtools requests carry, as a
 * real agent's do (test/fixtures/wpt/recorded-real-journey/), the fields of
 * the LAST step's page data instead: its name, its DOMContentLoaded. Each
 * step is made from a recorded one-page upload, its members renamed and its
 * devtools requests edited.
 * @param {{ testId: string, steps: { from: Buffer, eventName?: string, edit?: (devtools: any) => void }[] }} opts
 */
export async function scriptResultZip ({ testId, steps }) {
  /** @type {{ name: string, data: Buffer, devtools?: any }[][]} */
  const byStep = []
  /** @type {Record<string, any>[]} */
  const pageData = []
  for (const [i, step] of steps.entries()) {
    const n = i + 1
    const members = []
    for (const m of await readZip(step.from)) {
      const match = /^1_(?!Cached)(.*)$/.exec(m.name)
      if (!match) continue
      const name = n === 1 ? m.name : `1_${n}_${match[1]}`
      if (m.name.endsWith('_page_data.json.gz')) {
        pageData[i] = { ...JSON.parse(gunzipSync(m.data).toString()), eventName: step.eventName ?? `Step_${n}` }
        members.push({ name, data: gzipSync(JSON.stringify(pageData[i])) })
      } else if (m.name.endsWith('_devtools_requests.json.gz')) {
        const devtools = JSON.parse(gunzipSync(m.data).toString())
        devtools.pageData.testID = testId
        devtools.pageData.eventName = step.eventName ?? `Step_${n}`
        step.edit?.(devtools)
        members.push({ name, data: m.data, devtools })
      } else {
        members.push({ name, data: m.data })
      }
    }
    byStep.push(members)
  }
  const last = pageData.at(-1) ?? {}
  const out = []
  for (const [i, members] of byStep.entries()) {
    for (const m of members) {
      if (!m.devtools) { out.push(m); continue }
      // The agent's merge: the keys of the step's own page data, the values of the last step's.
      for (const k of Object.keys(pageData[i] ?? {})) if (k in last) m.devtools.pageData[k] = last[k]
      out.push({ name: m.name, data: gzipSync(JSON.stringify(m.devtools)) })
    }
  }
  return writeZip(out)
}

/**
 * The recorded steps of a WPT script, as wptagent reads it: a navigate or
 * any *AndWait command is a step; setEventName names the next one.
 * @param {string} script
 * @returns {{ command: string, target: string, eventName: string | null }[]}
 */
export function recordedSteps (script) {
  const steps = []
  let eventName = null
  for (const line of script.split('\n')) {
    const [command = '', target = ''] = line.split('\t')
    const c = command.trim().toLowerCase()
    if (c === 'seteventname') eventName = target.trim()
    if (c === 'navigate' || c.endsWith('andwait')) {
      steps.push({ command, target, eventName })
      eventName = null
    }
  }
  return steps
}
