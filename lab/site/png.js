import { deflateSync } from 'node:zlib'

// A PNG whose size is known before it is made: the pixels are stored with
// deflate level 0, so the file is the raw pixel bytes plus ~70 bytes of
// framing, whatever the picture looks like. That keeps the lab pages at the
// sizes their names promise, byte for byte, on every machine.

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

/** @param {Buffer} buf */
function crc32 (buf) {
  let c = 0xffffffff
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

/**
 * @param {string} type
 * @param {Buffer} data
 */
function chunk (type, data) {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([len, body, crc])
}

/**
 * An RGB picture: a diagonal gradient tinted by `hue` (0..1).
 * @param {{ width: number, height: number, hue?: number }} opts
 * @returns {Buffer}
 */
export function gradientPng ({ width, height, hue = 0.5 }) {
  const stride = 1 + width * 3
  const raw = Buffer.alloc(stride * height)
  for (let y = 0; y < height; y++) {
    raw[y * stride] = 0 // filter: none
    for (let x = 0; x < width; x++) {
      const t = (x / width + y / height) / 2
      const o = y * stride + 1 + x * 3
      raw[o] = Math.round(255 * (1 - t) * hue)
      raw[o + 1] = Math.round(160 * t + 60)
      raw[o + 2] = Math.round(255 * (1 - hue) * (0.5 + t / 2))
    }
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header[8] = 8 // bit depth
  header[9] = 2 // colour type: RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw, { level: 0 })),
    chunk('IEND', Buffer.alloc(0))
  ])
}

/**
 * The height that brings a `width`-pixel-wide stored PNG closest to `bytes`.
 * @param {number} width
 * @param {number} bytes
 */
export function heightForBytes (width, bytes) {
  return Math.max(1, Math.round(bytes / (1 + width * 3)))
}
