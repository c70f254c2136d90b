import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Options } from "@sluice/core"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { createHash, timingSafeEqual } from "node:crypto"
import type * as T from "../Trust.js"

/** @internal */
export const none: T.TrustPolicy = () => false

/** @internal */
export const everyone: T.TrustPolicy = () => true

/** @internal */
export const MIN_SECRET_LENGTH = 16

const RedactedString = Schema.declare(
  (u: unknown): u is Redacted.Redacted<string> =>
    Redacted.isRedacted(u) && typeof Redacted.value(u) === "string",
  { identifier: "Redacted<string>", description: "a Redacted string" }
)

const SharedSecretOptions = Schema.Struct({
  secret: RedactedString.pipe(
    Schema.filter((r) => Redacted.value(r).length >= MIN_SECRET_LENGTH, {
      message: () => `expected a secret of at least ${MIN_SECRET_LENGTH} characters`
    })
  ),
  header: Schema.optionalWith(
    Schema.String.pipe(
      Schema.pattern(/^[a-z0-9!#$%&'*+.^_`|~-]+$/, {
        message: () => "expected a lower-case header name"
      })
    ),
    { default: () => "x-sluice-trust" }
  )
})

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

const fromSharedSecret = (options: typeof SharedSecretOptions.Type): T.TrustPolicy => {
  // Both sides are hashed to 32 bytes first, so the comparison takes the same time
  // whatever the caller sends (length included), and `timingSafeEqual` never throws.
  const expected = digest(Redacted.value(options.secret))
  const header = options.header
  return (request) => {
    const raw = request.headers[header]
    if (typeof raw !== "string" || raw.length === 0 || raw.length > 1024) return false
    return timingSafeEqual(digest(raw), expected)
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
export const isLoopbackAddress = (address: string): boolean => {
  const a = address.toLowerCase()
  if (a === "::1" || a === "0:0:0:0:0:0:0:1") return true
  const v4 = a.startsWith("::ffff:") ? a.slice(7) : a
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4)
}

/** @internal */
export const peer =
  (predicate: (address: string) => boolean): T.TrustPolicy =>
  (request) => {
    const address = request.remoteAddress
    if (address._tag !== "Some") return false
    return predicate(address.value) === true
  }

/** @internal */
export const loopback: T.TrustPolicy = peer(isLoopbackAddress)

/** @internal */
export const all =
  (...policies: ReadonlyArray<T.TrustPolicy>): T.TrustPolicy =>
  (request) => {
    if (policies.length === 0) return false
    for (const policy of policies) if (!evaluate(policy, request)) return false
    return true
  }

/** @internal */
export const any =
  (...policies: ReadonlyArray<T.TrustPolicy>): T.TrustPolicy =>
  (request) => {
    for (const policy of policies) if (evaluate(policy, request)) return true
    return false
  }

/** @internal */
export const evaluate = (policy: T.TrustPolicy, request: HttpServerRequest.HttpServerRequest): boolean => {
  try {
    return policy(request) === true
  } catch {
    // A policy that throws trusts nobody.
    return false
  }
}

/** @internal */
export const currentCallerTrusted: FiberRef.FiberRef<boolean> = globalValue(
  Symbol.for("@sluice/http/Trust/currentCallerTrusted"),
  () => FiberRef.unsafeMake(false)
)
