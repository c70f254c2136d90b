/**
 * The saturation run of `packages/quota/test/RedisProcesses.test.ts` (8 processes × one key, 2,400
 * checks against a limit of 1,000, 32 in flight each, beside two busy loops), for any Quota
 * options: `npx tsx --conditions=@sluice/source bench/quota-processes.ts [variant…]`, against
 * REDIS_URL (default redis://127.0.0.1:6379). CPU-heavy: each run saturates the host for several
 * seconds. Variants (default: all four, one run each):
 * - `learned`: `{ deadline: "50 millis", maxDeadline: "1 second" }`, the learned deadline;
 * - `default`: `{}`, a hard 15 ms deadline, `fallback` with `fallbackShare` 1;
 * - `share8`: `{ fallbackShare: 1 / 8 }`, the fleet within the plan while Redis is away;
 * - `fail-open`: `{ mode: "fail-open" }` with the hard 15 ms deadline.
 * Prints one line per run (with the 1-minute load average before and after) and checks the
 * invariants that hold in every run: Redis counts at most 1,000 and only admitted units, anything
 * beyond them was admitted by the failure mode, and each fallback admits at most its share.
 */
import type { Quota } from "@sluice/quota"
import { describeSaturation, LIMIT, saturation } from "../packages/quota/test/quota/processes.js"

const variants: Record<string, Quota.QuotaOptions> = {
  learned: { deadline: "50 millis", maxDeadline: "1 second" },
  default: {},
  share8: { fallbackShare: 1 / 8 },
  "fail-open": { mode: "fail-open" }
}

const chosen = process.argv.slice(2)
const names = chosen.length > 0 ? chosen : Object.keys(variants)

for (const name of names) {
  const options = variants[name]
  if (options === undefined)
    throw new Error(`unknown variant ${name}: one of ${Object.keys(variants).join(", ")}`)
  const r = await saturation(options)
  const broken: Array<string> = []
  if (r.counted > LIMIT) broken.push("Redis counted beyond the limit")
  if (r.counted > r.admitted) broken.push("Redis counted units of callers that were denied")
  if (r.admitted - r.counted > r.otherAdmitted) broken.push("admitted beyond Redis and the failure mode")
  const share =
    options.mode === undefined || options.mode === "fallback" ? (options.fallbackShare ?? 1) : undefined
  if (share !== undefined && r.otherAdmitted > r.processes * Math.floor(LIMIT * share))
    broken.push("a fallback admitted beyond its share")
  console.log(
    `${name}: ${describeSaturation(r)}${broken.length > 0 ? ` — BROKEN: ${broken.join("; ")}` : ""}`
  )
}
