import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Wire from "@sluice/kernel/wire/Verdict"
import type { WireProtocolSettings } from "../Protocol.js"
import type { Decodable, DecodeError, ResponseLike, Verdict } from "../ResponseDecoder.js"
import * as protocol from "./protocol.js"

const toError = (error: Wire.DecodeError): DecodeError => protocol.fromDecoded(error) as DecodeError

/** @internal */
export const verdict = (
  response: ResponseLike,
  nowMillis: number,
  settings: WireProtocolSettings
): Verdict => {
  const v = Wire.verdict(response, nowMillis, settings.headers, Duration.toMillis(settings.maxRetryAfter))
  return { error: v.error === undefined ? undefined : toError(v.error), throttled: v.throttled }
}

/**
 * The verdict's error with what the error body says (`Verdict.withBody` of the kernel); the
 * same error when the body adds nothing.
 *
 * @internal
 */
export const withBody = (error: DecodeError, body: string, settings: WireProtocolSettings): DecodeError => {
  const decoded = protocol.toDecoded(error) as Wire.DecodeError
  const refined = Wire.withBody(decoded, body, Duration.toMillis(settings.maxRetryAfter))
  return refined === decoded ? error : toError(refined)
}

/** What the client adds to `decode`: its retryable statuses, a bound on the error body, a listener. @internal */
export interface DecodeOptions {
  readonly retryableStatuses?: ReadonlySet<number> | undefined
  readonly bodyTimeout?: Duration.Duration | undefined
  readonly onThrottle?: ((throttled: boolean) => void) | undefined
}

/** @internal */
export const decode = <Res extends Decodable>(
  response: Res,
  settings: WireProtocolSettings,
  json: boolean,
  options: DecodeOptions = {}
): Effect.Effect<readonly [Res, boolean], DecodeError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const maxRetryAfter = Duration.toMillis(settings.maxRetryAfter)
    const v = Wire.verdict(response, now, settings.headers, maxRetryAfter, options.retryableStatuses)
    const error = v.error
    if (error !== undefined) {
      options.onThrottle?.(v.throttled)
      // The error body is read for the server's error; a bound on it keeps a body that never
      // comes from holding what the caller holds (a permit), and the connection is reused.
      const text = Effect.orElseSucceed(response.text, () => "")
      const body =
        options.bodyTimeout === undefined
          ? text
          : Effect.timeoutOrElse(text, {
              duration: options.bodyTimeout,
              orElse: () => Effect.succeed("")
            })
      return Effect.flatMap(body, (b) => Effect.fail(toError(Wire.withBody(error, b, maxRetryAfter))))
    }
    if (v.throttled || !json || !Wire.mayCarryBodyThrottle(response)) {
      options.onThrottle?.(v.throttled)
      return Effect.succeed([response, v.throttled] as const)
    }
    const attribute = settings.throttleAttribute
    const fromBody = Effect.match(response.json, {
      onFailure: () => false,
      onSuccess: (body) => Wire.bodyThrottle(body, attribute)
    })
    return Effect.map(fromBody, (throttled) => {
      options.onThrottle?.(throttled)
      return [response, throttled] as const
    })
  })
