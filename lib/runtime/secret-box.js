// Encryption of secrets kept in the database (a journey's passwords):
// AES-256-GCM with a 256-bit key from H3LENS_SECRET_KEY, or else from
// <data dir>/secret-key (mode 0600, made on first use, like the admin key).
// A sealed value names its key by a short id, so after a rotation values
// sealed with the previous key (H3LENS_SECRET_KEY_PREVIOUS) still open, and
// resealAll moves them to the current key (docs/JOURNEYS.md, "Rotating the
// key"). The database alone never reveals a secret: the key is not in it.
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

export const SECRET_KEY_FILE = 'secret-key'
const VERSION = 'v1'

/**
 * A key as configured: 32 bytes, written as base64 (or base64url) or 64 hex digits.
 * @param {string} text
 * @param {string} source what to name in the error
 */
export function parseSecretKey (text, source) {
  const s = text.trim()
  const key = /^[0-9a-f]{64}$/i.test(s) ? Buffer.from(s, 'hex') : Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
  if (key.length !== 32) throw new Error(`${source}: a secret key is 32 bytes, written as base64 or 64 hex digits (make one with: openssl rand -base64 32)`)
  return key
}

/** @param {Buffer} key */
function keyId (key) {
  return crypto.createHash('sha256').update(key).digest('hex').slice(0, 8)
}

/**
 * The deployment's secret box. `key` wins (H3LENS_SECRET_KEY); without it
 * the key is read from <dataDir>/secret-key, which is created (0600) when
 * missing. `previous` (H3LENS_SECRET_KEY_PREVIOUS) opens values sealed
 * before a rotation.
 * @param {{ key?: string | null, previous?: string | null, dataDir?: string | null }} opts
 */
export function createSecretBox ({ key = null, previous = null, dataDir = null }) {
  /** @type {Buffer | null} */
  let current = key ? parseSecretKey(key, 'H3LENS_SECRET_KEY') : null
  const older = previous ? [parseSecretKey(previous, 'H3LENS_SECRET_KEY_PREVIOUS')] : []
  const currentKey = () => {
    if (current) return current
    if (!dataDir) throw new Error('no secret key: set H3LENS_SECRET_KEY or a data dir')
    current = readOrCreateKeyFile(path.join(dataDir, SECRET_KEY_FILE))
    return current
  }
  return {
    /**
     * @param {string} plaintext
     * @returns {string} 'v1.<key id>.<iv>.<tag>.<ciphertext>', base64url
     */
    seal (plaintext) {
      const k = currentKey()
      const iv = crypto.randomBytes(12)
      const cipher = crypto.createCipheriv('aes-256-gcm', k, iv)
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return [VERSION, keyId(k), iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.')
    },
    /**
     * @param {string} sealed
     * @returns {string}
     */
    open (sealed) {
      const [version, id, iv, tag, data] = String(sealed).split('.')
      if (version !== VERSION || data === undefined) throw new Error('not a sealed secret')
      const k = [currentKey(), ...older].find((c) => keyId(c) === id)
      if (!k) throw new Error(`a secret was sealed with key ${id}, which is neither H3LENS_SECRET_KEY nor H3LENS_SECRET_KEY_PREVIOUS`)
      const decipher = crypto.createDecipheriv('aes-256-gcm', k, Buffer.from(iv, 'base64url'))
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8')
    },
    /** Whether a sealed value is sealed with the current key. @param {string} sealed */
    isCurrent (sealed) {
      return String(sealed).split('.')[1] === keyId(currentKey())
    }
  }
}

/** @typedef {ReturnType<typeof createSecretBox>} SecretBox */

/**
 * The key file's key, or a new one written with mode 0600 (to a temporary
 * file first, so it is never readable by others, not even for a moment).
 * @param {string} file
 */
function readOrCreateKeyFile (file) {
  try {
    return parseSecretKey(fs.readFileSync(file, 'utf8'), file)
  } catch (/** @type {any} */ err) {
    if (err.code !== 'ENOENT') throw err
  }
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const tmp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(tmp, crypto.randomBytes(32).toString('base64') + '\n', { mode: 0o600 })
  fs.chmodSync(tmp, 0o600)
  try {
    // Another process may have made one meanwhile: theirs stands.
    fs.linkSync(tmp, file)
  } catch (/** @type {any} */ err) {
    if (err.code !== 'EEXIST') throw err
  } finally {
    fs.rmSync(tmp, { force: true })
  }
  return parseSecretKey(fs.readFileSync(file, 'utf8'), file)
}
