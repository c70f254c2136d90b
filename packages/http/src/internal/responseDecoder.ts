import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as ErrorBody from "@sluice/kernel/wire/ErrorBody"
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

const utf8 = new TextDecoder()

/**
 * The first `max` bytes of a body as text. Reading stops there and the stream's finalizer
 * drops the rest with its connection: a body of any size, or one that never ends, costs the
 * reader `max` bytes. A character cut in two at the bound decodes as U+FFFD; the error body's
 * strings are cut far sooner anyway.
 *
 * @internal
 */
export const readPrefix = <E, R>(
  stream: Stream.Stream<Uint8Array, E, R>,
  max: number
): Effect.Effect<string, E, R> =>
  Effect.suspend(() => {
    const kept: Array<Uint8Array> = []
    let size = 0
    const collect = Stream.runForEachWhile(stream, (chunk) =>
      Effect.sync(() => {
        const room = max - size
        // a copy, so the kept bytes do not hold the whole of a large chunk alive
        const part = chunk.length > room ? chunk.slice(0, room) : chunk
        kept.push(part)
        size += part.length
        return size < max
      })
    )
    return Effect.map(collect, () => {
      const bytes = new Uint8Array(size)
      let at = 0
      for (const part of kept) {
        bytes.set(part, at)
        at += part.length
      }
      return utf8.decode(bytes)
    })
  })

/**
 * The most of an error body `decode` reads: one byte past the longest text parsed as Sluice's
 * own body, so a longer one is still recognised as not Sluice's.
 *
 * @internal
 */
export const MAX_ERROR_BODY_BYTES = ErrorBody.MAX_BODY + 1

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
      // Its size is bounded as well as its time: a huge or endless body is cut, not buffered.
      const text = Effect.orElseSucceed(
        response.stream === undefined ? response.text : readPrefix(response.stream, MAX_ERROR_BODY_BYTES),
        () => ""
      )
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
