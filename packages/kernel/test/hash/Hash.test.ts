import * as Sha1 from "@sluice/kernel/hash/Sha1"
import * as Sha256 from "@sluice/kernel/hash/Sha256"
import * as Utf8 from "@sluice/kernel/hash/Utf8"
import fc from "fast-check"
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"

// Node's own implementations are the reference: the kernel's must agree on every string,
// astral characters (surrogate pairs) and lone surrogates included.
const node = (algorithm: "sha1" | "sha256", text: string) => createHash(algorithm).update(text).digest("hex")

const arbText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 300 }),
  fc.string({ unit: "grapheme", maxLength: 100 }),
  fc.string({ maxLength: 200 })
)

describe("Utf8", () => {
  it("encodes as Buffer.from(text, 'utf8') does, lone surrogates as U+FFFD", () => {
    for (const text of ["", "a", "é", "€", "😀", "\ud800", "\udc00x", "a\ud83d", "\ud83d\ude00\ud800"])
      expect(Array.from(Utf8.encode(text))).toEqual(Array.from(Buffer.from(text, "utf8")))
    fc.assert(
      fc.property(arbText, (text) => {
        expect(Array.from(Utf8.encode(text))).toEqual(Array.from(Buffer.from(text, "utf8")))
      }),
      { numRuns: 500 }
    )
  })
})

describe("Sha256 and Sha1", () => {
  it("known vectors (FIPS 180-4 examples)", () => {
    expect(Sha256.hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    expect(Sha256.hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    expect(Sha1.hex("abc")).toBe("a9993e364706816aba3e25717850c26c9cd0d89d")
    expect(Sha1.hex("")).toBe("da39a3ee5e6b4b0d3255bfef95601890afd80709")
    expect(Sha1.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
    )
  })

  it("agree with node:crypto on any string, at every length around the block boundaries", () => {
    for (let length = 0; length <= 130; length++) {
      const text = "x".repeat(length)
      expect(Sha256.hex(text)).toBe(node("sha256", text))
      expect(Sha1.hex(text)).toBe(node("sha1", text))
    }
    fc.assert(
      fc.property(arbText, (text) => {
        expect(Sha256.hex(text)).toBe(node("sha256", text))
        expect(Sha1.hex(text)).toBe(node("sha1", text))
      }),
      { numRuns: 500 }
    )
    const long = "é".repeat(10_000)
    expect(Sha256.hex(long)).toBe(node("sha256", long))
    expect(Sha1.hex(long)).toBe(node("sha1", long))
  })
})
