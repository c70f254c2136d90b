import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { SluiceHttpClient } from "@sluice/http"

const MB = 1024 * 1024

/**
 * A raw server whose every answer is a 503 with a body of `size` bytes (`Infinity`: a
 * chunked body that never ends), written as fast as the reader takes it and no faster, so
 * `written` is what the client made room for. A body stops at its size, when the
 * connection closes, or at 1 GB.
 */
const hugeErrorServer = (size: number) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ base: string; written: () => number; closed: () => boolean; close: () => void }>(
          (ok) => {
            let written = 0
            let closed = false
            const chunk = Buffer.alloc(64 * 1024, "x")
            const server = createServer((_req, res) => {
              res.on("close", () => {
                closed = true
              })
              res.writeHead(503, {
                "content-type": "text/plain",
                ...(Number.isFinite(size) ? { "content-length": String(size) } : {})
              })
              const pump = (): void => {
                while (!closed && written < Math.min(size, 1024 * MB)) {
                  const part = chunk.subarray(0, Math.min(chunk.length, size - written))
                  written += part.length
                  if (!res.write(part)) {
                    res.once("drain", pump)
                    return
                  }
                }
                if (!closed) res.end()
              }
              pump()
            })
            server.listen(0, "127.0.0.1", () => {
              const { port } = server.address() as AddressInfo
              ok({
                base: `http://127.0.0.1:${port}`,
                written: () => written,
                closed: () => closed,
                close: () => {
                  server.closeAllConnections()
                  server.close()
                }
              })
            })
          }
        )
    ),
    (s) => Effect.sync(s.close)
  )

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const e = Cause.findErrorOption(exit.cause)
  if (Option.isNone(e)) throw new Error(`expected a typed failure: ${Cause.pretty(exit.cause)}`)
  return e.value
}

// What loopback socket buffers and undici's own queue may hold beyond the bytes the
// decoder reads (64 KB): a few MB at most, far below the bodies sent.
const BOUND = 16 * MB

describe("SluiceHttpClient reads at most a bounded prefix of an error body (real sockets)", () => {
  it.live.each([
    ["a 50 MB body, read with all the time it wants", 50 * MB, { errorBodyTimeout: "5 minutes" }],
    ["a body that never ends, with the default errorBodyTimeout", Infinity, {}]
  ] as const)("%s: typed error, the rest dropped unread", ([, size, options]) =>
    Effect.gen(function* () {
      const server = yield* hugeErrorServer(size)
      const client = yield* SluiceHttpClient.SluiceHttpClient
      const heapBefore = process.memoryUsage().heapUsed
      const error = failure(yield* Effect.exit(client.get(server.base + "/")))
      // 503 is retryable: one attempt, so its Overloaded ends as DontRetry(attempts)
      expect(error._tag).toBe("DontRetry")
      if (error._tag === "DontRetry") expect(error.cause).toMatchObject({ _tag: "Overloaded" })
      expect(server.written()).toBeLessThan(BOUND)
      // the rest of the body is not left queued behind the connection: it is closed
      yield* Effect.promise(
        () =>
          new Promise<void>((ok) => {
            const poll = () => (server.closed() ? ok() : setTimeout(poll, 10))
            poll()
          })
      )
      expect(server.closed()).toBe(true)
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(BOUND * 2)
    }).pipe(
      Effect.provide(
        SluiceHttpClient.layerDefault({ maxAttempts: 1, ...options }).pipe(
          Layer.provide(NodeHttpClient.layerUndici)
        )
      )
    )
  )
})
