import { createServer } from "node:http"
import { HttpServer } from "@effect/platform"
import type { HttpApp, HttpServerRequest } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import type { Scope } from "effect"

/**
 * Serves `app` on a loopback port chosen by the OS for the life of the scope and
 * returns its base URL.
 */
export const serve = <E, R>(
  app: HttpApp.Default<E, R>
): Effect.Effect<
  string,
  never,
  Scope.Scope | Exclude<R, HttpServerRequest.HttpServerRequest | Scope.Scope>
> =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      HttpServer.serve(app).pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
      )
    ).pipe(Effect.orDie)
    const server = yield* Effect.provide(HttpServer.HttpServer, context)
    const address = server.address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return `http://127.0.0.1:${address.port}`
  }) as any
