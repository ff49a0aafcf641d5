// Byte-level helpers for the sketch encoding: unsigned LEB128 varints,
// zigzag for signed keys, and little-endian float64.
//
// Arithmetic (not 32-bit bitwise operators) keeps integers exact up to
// 2^53, the largest count a JavaScript number holds exactly.

export class ByteWriter {
  constructor () {
    /** @type {number[]} */
    this.bytes = []
  }

  /** @param {number} value */
  uint8 (value) {
    this.bytes.push(value & 0xff)
  }

  /** @param {number} value a safe non-negative integer */
  varuint (value) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`cannot encode ${value} as an unsigned varint`)
    }
    while (value >= 0x80) {
      this.bytes.push((value % 0x80) + 0x80)
      value = Math.floor(value / 0x80)
    }
    this.bytes.push(value)
  }

  /** @param {number} value a safe integer */
  varint (value) {
    this.varuint(value < 0 ? -2 * value - 1 : 2 * value)
  }

  /** @param {number} value */
  float64 (value) {
    const buf = Buffer.allocUnsafe(8)
    buf.writeDoubleLE(value, 0)
    for (const byte of buf) this.bytes.push(byte)
  }

  toBuffer () {
    return Buffer.from(this.bytes)
  }
}

export class ByteReader {
  /** @param {Uint8Array} bytes */
  constructor (bytes) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    this.pos = 0
  }

  get done () {
    return this.pos === this.buf.length
  }

  uint8 () {
    this.need(1)
    return this.buf[this.pos++]
  }

  varuint () {
    let value = 0
    let scale = 1
    for (;;) {
      const byte = this.uint8()
      value += (byte & 0x7f) * scale
      if (byte < 0x80) break
      scale *= 0x80
      if (scale > 2 ** 53) throw new RangeError('varint longer than 53 bits')
    }
    return value
  }

  varint () {
    const zigzag = this.varuint()
    return zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2
  }

  float64 () {
    this.need(8)
    const value = this.buf.readDoubleLE(this.pos)
    this.pos += 8
    return value
  }

  /** @param {number} n */
  need (n) {
    if (this.pos + n > this.buf.length) {
      throw new RangeError(`truncated: needed ${n} more byte(s) at offset ${this.pos} of ${this.buf.length}`)
    }
  }
}
