/**
 * What SHA-1 and SHA-256 share (FIPS 180-4 §5.1.1, §5.2.1): the message padded to whole 64-byte
 * blocks — a `1` bit, zeros, and the length in bits as a 64-bit big-endian number — and the
 * digest spelled as lowercase hex of the big-endian state words.
 *
 * @since 0.2.0
 */
import { encode } from "./Utf8.js"

/**
 * `text`'s UTF-8 bytes (with `lossless`, WTF-8: see `Utf8.encode`) padded to whole 64-byte
 * blocks, as a big-endian view of them.
 *
 * @since 0.2.0
 */
export const padded = (text: string, lossless = false): DataView => {
  const bytes = encode(text, lossless)
  const bitLength = bytes.length * 8
  const blocks = new Uint8Array(((bytes.length + 9 + 63) >> 6) << 6)
  blocks.set(bytes)
  blocks[bytes.length] = 0x80
  const view = new DataView(blocks.buffer)
  view.setUint32(blocks.length - 8, Math.floor(bitLength / 2 ** 32))
  view.setUint32(blocks.length - 4, bitLength >>> 0)
  return view
}

/**
 * The state words as lowercase hex, 8 digits each.
 *
 * @since 0.2.0
 */
export const toHex = (words: Uint32Array): string => {
  let out = ""
  for (const word of words) out += word.toString(16).padStart(8, "0")
  return out
}
