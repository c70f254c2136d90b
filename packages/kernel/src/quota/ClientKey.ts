/**
 * The key a client's quota state is stored under. An id up to the bound is its own key; a
 * longer one is keyed by its first code units, `#` and the SHA-256 of the whole id, so no id
 * grows a store unboundedly and two long ids that share a prefix stay two clients.
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
  const hash = Sha256.hex(client)
  const codes: Array<number> = new Array(prefixLength + 1 + hash.length)
  for (let i = 0; i < prefixLength; i++) codes[i] = client.charCodeAt(i)
  codes[prefixLength] = 35 // "#"
  for (let i = 0; i < hash.length; i++) codes[prefixLength + 1 + i] = hash.charCodeAt(i)
  return String.fromCharCode(...codes)
}

/**
 * The key of `client` for ids of at most `maxLength` code units (at least 80: a prefix, `#` and
 * 64 hex digits): the id itself, or {@link longIdKey} of exactly `maxLength` code units.
 *
 * @since 0.2.0
 */
export const storedId = (client: string, maxLength: number): string =>
  client.length <= maxLength ? client : longIdKey(client, maxLength - 65)
