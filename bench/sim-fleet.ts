/**
 * `bench:overload`'s client fleets in virtual time (`PriorityFleet` of `@sluice/simulation`):
 * four clients, operations at 10× a 32-slot server that sheds by priority, 2 s deadline per
 * operation. Compares the client's defaults (a throttle and a congestion window per
 * criticality level, waiters newest first) with one state per host served oldest first (the
 * client before) and with naive clients (3 attempts at once), over `--seeds N` seeds (3).
 * Prints JSON; `npm run bench:sim-fleet`.
 */
import { PriorityFleet } from "@sluice/simulation"
import { Effect } from "effect"

const args = process.argv.slice(2)
const at = args.indexOf("--seeds")
const seeds = at < 0 ? 3 : Number(args[at + 1])
if (!Number.isInteger(seeds) || seeds <= 0) throw new Error("--seeds: expected a positive integer")

const variants: Record<string, PriorityFleet.Options> = {
  sluice: {},
  "per-host-fifo": { perLevel: false, order: "fifo" },
  "per-level-fifo": { order: "fifo" },
  "per-host-lifo": { perLevel: false },
  naive: { client: "naive" }
}

const round = (x: number) => Math.round(x * 1000) / 1000
const program = Effect.gen(function* () {
  const out: Record<string, Array<object>> = {}
  for (const [name, options] of Object.entries(variants)) {
    out[name] = []
    for (let seed = 1; seed <= seeds; seed++) {
      const r = yield* PriorityFleet.run({ ...options, seed })
      out[name].push({
        seed,
        goodputRatio: round(r.goodputRatio),
        attemptsPerOperation: round(r.attemptsPerOperation),
        criticalSuccess: round(r.criticalSuccess),
        wasted: r.wasted,
        failures: r.failures
      })
    }
  }
  return out
})

Effect.runPromise(program).then(
  (result) => console.log(JSON.stringify(result)),
  (error) => {
    console.error("sim-fleet failed:", error)
    process.exit(1)
  }
)
