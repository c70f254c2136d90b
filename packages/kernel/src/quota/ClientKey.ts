/**
 * The key a client's quota state is stored under. An id up to the bound is its own key; a
 * longer one is keyed by its first code units, `#` and the SHA-256 of the whole id, so no id
 * grows a store unboundedly and two long ids that share a prefix stay two clients.
 *
 * An id with a lone UTF-16 surrogate is keyed the same way at any length: Redis stores a key as
 * UTF-8, where every lone surrogate becomes U+FFFD, so `"\ud800"` and `"\ud801"` would share one
 * quota in Redis and not in memory. The SHA-256 is of the id's WTF-8 bytes (a lone surrogate as
 * its own three bytes), so such ids stay distinct in both stores alike.
 *
 * @since 0.2.0
 */
import * as Sha256 from "../hash/Sha256.js"

/**
 * The key of an id above the bound: its first `prefixLength` UTF-16 code units, `#` and the
 * SHA-256 of the whole id, as a string of its own. A substring in V8 may be a view into the
 * string it was cut from, so a key made with `slice` kept the caller's whole id alive as long as
 * the client was stored (for 10 KB ids, over twenty times the memory per client: see
 * bench/README.md); a string built from character codes shares nothing with the id.
 *
 * @since 0.2.0
 */
export const longIdKey = (client: string, prefixLength: number): string => {
  const hash = Sha256.hex(client, true)
  const codes: Array<number> = new Array(prefixLength + 1 + hash.length)
  for (let i = 0; i < prefixLength; i++) codes[i] = client.charCodeAt(i)
  codes[prefixLength] = 35 // "#"
  for (let i = 0; i < hash.length; i++) codes[prefixLength + 1 + i] = hash.charCodeAt(i)
  return String.fromCharCode(...codes)
}

/** A lone surrogate: a high one not followed by a low one, or a low one not after a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * The key of `client` for ids of at most `maxLength` code units (at least 80: a prefix, `#` and
 * 64 hex digits): the id itself, or {@link longIdKey} of at most `maxLength` code units (a long
 * id, or one with a lone surrogate: see the module's description).
 *
 * @since 0.2.0
 */
export const storedId = (client: string, maxLength: number): string =>
  client.length > maxLength
    ? longIdKey(client, maxLength - 65)
    : LONE_SURROGATE.test(client)
      ? longIdKey(client, Math.min(client.length, maxLength - 65))
      : client
