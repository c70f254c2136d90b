/**
 * A child process for the cross-process atomicity test: waits for "go" on stdin,
 * then hammers one client's quota through its own Redis connection and prints
 * how many checks were admitted.
 */
import { Quota, QuotaConfig } from "@sluice/core"
import * as Redis from "@sluice/core/Redis"
import { Effect, Layer } from "effect"
import * as readline from "node:readline"

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const prefix = process.env.QUOTA_PREFIX!
const client = process.env.QUOTA_CLIENT!
const attempts = Number(process.env.QUOTA_ATTEMPTS ?? "200")
const plan = JSON.parse(process.env.QUOTA_PLAN!) as QuotaConfig.PlanInput

const layer = Quota.layer({ mode: "fail-closed", deadline: "10 seconds" }).pipe(
  Layer.provide(Redis.layerRedis({ url, prefix })),
  Layer.provide(QuotaConfig.layer({ default: plan }))
)

const waitForGo = Effect.async<void>((resume) => {
  const lines = readline.createInterface({ input: process.stdin })
  lines.on("line", (line) => {
    if (line.trim() === "go") {
      lines.close()
      resume(Effect.void)
    }
  })
})

const program = Effect.gen(function* () {
  const quota = yield* Quota.Quota
  // Connect, load the script and warm the JIT on another client key, so that every
  // process starts hammering at the same moment rather than after its cold start.
  yield* Effect.forEach(Array.from({ length: 20 }), () => quota.check(`${client}:warm-up:${process.pid}`))
  process.stdout.write("ready\n")
  yield* waitForGo
  const startedAt = Date.now()
  const decisions = yield* Effect.forEach(Array.from({ length: attempts }), () => quota.check(client), {
    concurrency: 16
  })
  const endedAt = Date.now()
  const admitted = decisions.filter((d) => d.allowed).length
  const storeFailures = decisions.filter((d) => d.source !== "store").length
  process.stdout.write(
    JSON.stringify({ pid: process.pid, admitted, storeFailures, startedAt, endedAt }) + "\n"
  )
}).pipe(Effect.provide(layer))

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
