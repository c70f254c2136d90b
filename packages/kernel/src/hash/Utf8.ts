/**
 * A string's UTF-8 bytes, as the WHATWG `TextEncoder` and Node's `Buffer.from(text, "utf8")`
 * spell them (a lone surrogate becomes U+FFFD), written out so the kernel's hashes run in any
 * ES2022 runtime, where neither global is part of the language.
 *
 * @since 0.2.0
 */

/**
 * The UTF-8 encoding of `text`; a lone surrogate is encoded as U+FFFD (`EF BF BD`), or, with
 * `lossless`, as its own three bytes (WTF-8: `ED A0 80` for U+D800), which no well-formed text
 * produces, so distinct strings always have distinct bytes (and well-formed text its UTF-8).
 *
 * @since 0.2.0
 */
export const encode = (text: string, lossless = false): Uint8Array => {
  // at most three bytes per UTF-16 code unit (a surrogate pair: four bytes for two units)
  const out = new Uint8Array(text.length * 3)
  let n = 0
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i)
    if (c < 0x80) {
      out[n++] = c
      continue
    }
    if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6)
      out[n++] = 0x80 | (c & 0x3f)
      continue
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00)
        out[n++] = 0xf0 | (cp >> 18)
        out[n++] = 0x80 | ((cp >> 12) & 0x3f)
        out[n++] = 0x80 | ((cp >> 6) & 0x3f)
        out[n++] = 0x80 | (cp & 0x3f)
        i++
        continue
      }
      if (!lossless) c = 0xfffd
    }
    out[n++] = 0xe0 | (c >> 12)
    out[n++] = 0x80 | ((c >> 6) & 0x3f)
    out[n++] = 0x80 | (c & 0x3f)
  }
  return out.subarray(0, n)
}
