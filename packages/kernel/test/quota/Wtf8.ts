// A reference WTF-8 encoder for the tests, written with Node's Buffer and independent of the
// kernel's own `hash/Utf8`: UTF-8, with a lone surrogate as its own three bytes (not U+FFFD).
export const wtf8 = (text: string): Buffer => {
  const parts: Array<Buffer> = []
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    const next = text.charCodeAt(i + 1)
    if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      parts.push(Buffer.from(text.slice(i, i + 2), "utf8"))
      i++
    } else if (c >= 0xd800 && c <= 0xdfff)
      parts.push(Buffer.from([0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)]))
    else parts.push(Buffer.from(text[i]!, "utf8"))
  }
  return Buffer.concat(parts)
}
