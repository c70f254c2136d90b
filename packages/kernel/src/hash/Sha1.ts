/**
 * SHA-1 (FIPS 180-4) of a string's UTF-8 bytes, in plain TypeScript. Redis names a loaded Lua
 * script by the SHA-1 of its text (`EVALSHA`), and the quota store derives each tier's id in
 * its stored state from one: both are computed here, without `node:crypto`, so the script
 * generator runs in any runtime. Not for security: a name, not a secret.
 *
 * @since 0.2.0
 */
import { padded, toHex } from "./MerkleDamgard.js"

const rotl = (x: number, n: number) => (x << n) | (x >>> (32 - n))

/**
 * The SHA-1 of `text`'s UTF-8 bytes, as 40 lowercase hex digits (what Redis' `SCRIPT LOAD`
 * answers for a script).
 *
 * @since 0.2.0
 */
export const hex = (text: string): string => {
  const view = padded(text)
  const h = new Uint32Array([0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0])
  const w = new Uint32Array(80)
  for (let offset = 0; offset < view.byteLength; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + 4 * i)
    for (let i = 16; i < 80; i++) w[i] = rotl(w[i - 3]! ^ w[i - 8]! ^ w[i - 14]! ^ w[i - 16]!, 1)
    let a = h[0]!,
      b = h[1]!,
      c = h[2]!,
      d = h[3]!,
      e = h[4]!
    for (let i = 0; i < 80; i++) {
      let f: number
      let k: number
      if (i < 20) {
        f = (b & c) | (~b & d)
        k = 0x5a827999
      } else if (i < 40) {
        f = b ^ c ^ d
        k = 0x6ed9eba1
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d)
        k = 0x8f1bbcdc
      } else {
        f = b ^ c ^ d
        k = 0xca62c1d6
      }
      const t = (rotl(a, 5) + f + e + k + w[i]!) >>> 0
      e = d
      d = c
      c = rotl(b, 30) >>> 0
      b = a
      a = t
    }
    h[0] = (h[0]! + a) >>> 0
    h[1] = (h[1]! + b) >>> 0
    h[2] = (h[2]! + c) >>> 0
    h[3] = (h[3]! + d) >>> 0
    h[4] = (h[4]! + e) >>> 0
  }
  return toHex(h)
}
