import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import type { Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"

/**
 * The routes as one handler of the current request (a missing route fails with
 * `RouteNotFound`), for Sluice's middleware to wrap as it wraps a whole router.
 */
export const routes = <const Routes extends ReadonlyArray<HttpRouter.Route<any, any>>>(...routes: Routes) =>
  HttpRouter.toHttpEffect(HttpRouter.addAll(routes))

/**
 * Serves `app` on a loopback port chosen by the OS for the life of the scope and
 * returns its base URL.
 */
export const serve = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
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
    return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  })
