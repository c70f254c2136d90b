import { Errors } from "@sluice/core"
import { QuotaStore } from "@sluice/quota"
import { Backoff, Retry } from "@sluice/retry"
import { AimdInterval } from "@sluice/adaptive"
import { Middleware } from "@sluice/http"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { Generated, all, budgetLayer, busy, clientLayer, withRetries } from "sluice-lib"

// options read from configuration: every field may be undefined
interface Config {
  readonly maxAttempts: number | undefined
  readonly maxClients: number | undefined
  readonly factor: number | undefined
}
declare const cfg: Config

export const policy = Retry.withRetry({ maxAttempts: cfg.maxAttempts })
export const store = QuotaStore.layerMemory({ maxClients: cfg.maxClients })
export const backoff = Backoff.exponential({ base: "100 millis", factor: cfg.factor })

// the library's inferred types are usable, and precise (not any)
export const retried = withRetries(busy, cfg.maxAttempts)
const dontRetry: Effect.Effect<never, Errors.DontRetry, unknown> = retried
void dontRetry
// @ts-expect-error Overloaded must be gone after the library's retry policy
const overloaded: Effect.Effect<never, Errors.Overloaded, unknown> = retried
void overloaded
export const program = retried.pipe(Effect.provide(budgetLayer(0.2)), Effect.provide(all))
export const client = clientLayer.pipe(Layer.provide(NodeHttpClient.layerUndici))
export const generated = Generated.v_core_Errors_Overloaded
export const interval = AimdInterval.layer({ min: "1 second", max: "1 minute" })
export const middleware = Middleware.loadShed
