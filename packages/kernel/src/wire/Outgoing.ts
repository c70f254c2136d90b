/**
 * What a client makes of an outgoing request before it is sent: the backend it is counted
 * against (throttle, limiter), by default the URL's host, and whether it may be retried, by
 * default only for the methods RFC 9110 calls idempotent (a retried POST may do its work twice).
 *
 * @since 0.2.0
 */

/**
 * The idempotent methods (RFC 9110 §9.2.2): retried by default.
 *
 * @since 0.2.0
 */
export const IDEMPOTENT: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"])

const HOST = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]+)/i

/**
 * The host (with its port, lower case) of an absolute URL; `"default"` for anything else.
 *
 * @since 0.2.0
 */
export const hostOf = (url: string): string => {
  const match = HOST.exec(url)
  return match === null ? "default" : match[1]!.toLowerCase()
}

/**
 * Whether a request is retried: as the caller opted in or out for this call, else when the
 * client retries every method, else when the method is idempotent.
 *
 * @since 0.2.0
 */
export const isRetried = (method: string, optIn: boolean | undefined, retryNonIdempotent: boolean): boolean =>
  optIn ?? (retryNonIdempotent || IDEMPOTENT.has(method))
