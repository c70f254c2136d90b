/**
 * Memory used by the quota memory store: `tsx --conditions=@sluice/source bench/quota-memory.ts [--keys N]`.
 *
 * Fills a store with N distinct clients (one check each, default 1,000,000) for a
 * one-tier (gcra) and a two-tier (gcra + sliding-window) plan, and reports the
 * retained heap after a full GC; then shows the default bound (100,000 clients)
 * holding under the same million keys. Prints JSON.
 */
import { Options } from "@sluice/core"
import { QuotaConfig, QuotaStore } from "@sluice/quota"
import { Effect } from "effect"
import * as v8 from "node:v8"
import * as vm from "node:vm"

v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void

const args = process.argv.slice(2)
const keysArg = args.indexOf("--keys")
const KEYS = keysArg >= 0 ? Number(args[keysArg + 1]) : 1_000_000

const heap = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

const plans = {
  oneTier: { tiers: [{ name: "hour", algorithm: "gcra", limit: 5000, period: "1 hour" }] },
  twoTier: {
    tiers: [
      { name: "spike", algorithm: "gcra", limit: 20, period: "1 second", burst: 40 },
      { name: "count", algorithm: "sliding-window", limit: 5000, period: "1 hour" }
    ]
  }
} as const

// client ids are made up front, so their strings are not counted as store memory
const clients = Array.from({ length: KEYS }, (_, i) => `client-${i}`)

const measure = (plan: QuotaConfig.PlanInput, maxClients: number) => {
  const compiled = QuotaConfig.compile(Options.decodeSync("bench", QuotaConfig.Plan)(plan as any))
  const before = heap()
  let store: QuotaStore.MemoryStore | undefined = Effect.runSync(QuotaStore.makeMemory({ maxClients }))
  const start = performance.now()
  for (const client of clients) store.checkUnsafe(client, compiled, 1)
  const elapsedMs = performance.now() - start
  const after = heap()
  const size = Effect.runSync(store.size)
  store = undefined
  const bytes = after - before
  return {
    clientsHeld: size,
    heapMB: Math.round(bytes / 1e5) / 10,
    bytesPerClient: Math.round(bytes / size),
    checksPerSec: Math.round(KEYS / (elapsedMs / 1000))
  }
}

// maxClients of twice the keys: with two generations, every key is held
const oneTier = measure(plans.oneTier as unknown as QuotaConfig.PlanInput, 2 * KEYS)
const twoTier = measure(plans.twoTier as unknown as QuotaConfig.PlanInput, 2 * KEYS)
// the default bound (100,000 clients) under the same keys
const boundedDefault = measure(plans.twoTier as unknown as QuotaConfig.PlanInput, 100_000)
console.log(JSON.stringify({ keys: KEYS, oneTier, twoTier, boundedDefault }))
