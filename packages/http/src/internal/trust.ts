import { Options } from "@sluice/core"
import * as Trust from "@sluice/kernel/wire/Trust"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { createHash, timingSafeEqual } from "node:crypto"
import type * as T from "../Trust.js"

const RedactedString = Schema.declare(
  (u: unknown): u is Redacted.Redacted<string> =>
    Redacted.isRedacted(u) && typeof Redacted.value(u) === "string",
  { identifier: "Redacted<string>", description: "a Redacted string" }
)

const SharedSecretOptions = Schema.Struct({
  secret: RedactedString.check(
    Schema.makeFilter((r) =>
      Redacted.value(r).length >= Trust.MIN_SECRET_LENGTH
        ? undefined
        : `expected a secret of at least ${Trust.MIN_SECRET_LENGTH} characters`
    )
  ),
  header: Schema.String.check(
    Schema.makeFilter((h) => (Trust.isHeaderName(h) ? undefined : "expected a lower-case header name"))
  ).pipe(Schema.withDecodingDefaultType(Effect.succeed(Trust.DEFAULT_SECRET_HEADER)))
})

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

const fromSharedSecret = (options: typeof SharedSecretOptions.Type): T.TrustPolicy => {
  // Both sides are hashed to 32 bytes first, so the comparison takes the same time
  // whatever the caller sends (length included), and `timingSafeEqual` never throws.
  const expected = digest(Redacted.value(options.secret))
  const header = options.header
  return (request) => {
    const presented = Trust.presentedSecret(request.headers[header])
    return presented !== undefined && timingSafeEqual(digest(presented), expected)
  }
}

const decodeSharedSecret = Options.decode("Trust.sharedSecret", SharedSecretOptions)
const decodeSharedSecretSync = Options.decodeSync("Trust.sharedSecret", SharedSecretOptions)

/** @internal */
export const sharedSecret = (
  options: T.SharedSecretOptions
): Effect.Effect<T.TrustPolicy, Options.InvalidOptions> =>
  Effect.map(decodeSharedSecret(options), fromSharedSecret)

/** @internal */
export const sharedSecretUnsafe = (options: T.SharedSecretOptions): T.TrustPolicy =>
  fromSharedSecret(decodeSharedSecretSync(options))

/** @internal */
export const peer =
  (predicate: (address: string) => boolean): T.TrustPolicy =>
  (request: HttpServerRequest.HttpServerRequest) =>
    // The socket's peer: a forwarding middleware replaces `remoteAddress` from a header a
    // caller can write, never `peerAddress`.
    request.peerAddress._tag === "Some" && predicate(request.peerAddress.value) === true

/** @internal */
export const loopback: T.TrustPolicy = peer(Trust.isLoopbackAddress)

/** @internal */
export const currentCallerTrusted: Context.Reference<boolean> = Context.Reference<boolean>(
  "@sluice/http/Trust/currentCallerTrusted",
  { defaultValue: () => false }
)
