import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Options } from "@sluice/core"
import * as Trust from "@sluice/kernel/wire/Trust"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
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
  secret: RedactedString.pipe(
    Schema.filter((r) => Redacted.value(r).length >= Trust.MIN_SECRET_LENGTH, {
      message: () => `expected a secret of at least ${Trust.MIN_SECRET_LENGTH} characters`
    })
  ),
  header: Schema.optionalWith(
    Schema.String.pipe(
      Schema.filter(Trust.isHeaderName, { message: () => "expected a lower-case header name" })
    ),
    { default: () => Trust.DEFAULT_SECRET_HEADER }
  )
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
export const unsafeSharedSecret = (options: T.SharedSecretOptions): T.TrustPolicy =>
  fromSharedSecret(decodeSharedSecretSync(options))

/** @internal */
export const peer =
  (predicate: (address: string) => boolean): T.TrustPolicy =>
  (request: HttpServerRequest.HttpServerRequest) =>
    request.remoteAddress._tag === "Some" && predicate(request.remoteAddress.value) === true

/** @internal */
export const loopback: T.TrustPolicy = peer(Trust.isLoopbackAddress)

/** @internal */
export const currentCallerTrusted: FiberRef.FiberRef<boolean> = globalValue(
  Symbol.for("@sluice/http/Trust/currentCallerTrusted"),
  () => FiberRef.unsafeMake(false)
)
