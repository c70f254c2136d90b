/**
 * The Redis quota script: generated per plan shape (what the store ships) against one static
 * script that loops over the tiers (field names, kinds and numbers as arguments), same
 * arithmetic and reply. Two-tier plan, 100 EVALSHA in flight, rounds in turn; prints JSON.
 * `npm run bench:quota-script`
 */
import { Options, QuotaConfig } from "@sluice/core"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { Redis } from "ioredis"
import { scriptFor, tierSpecArgs } from "../packages/core/src/internal/redisQuotaStore.js"

const STATIC = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local k = KEYS[1]
local num, fmt, floor = tonumber, string.format, math.floor
local cost = num(ARGV[1])
local n = (#ARGV - 2) / 5
local fields = {}
for i = 0, n - 1 do
  local a = 3 + 5 * i
  local name = ARGV[a + 1]
  if ARGV[a] == 'g' then
    fields[#fields + 1] = name .. '|t'; fields[#fields + 1] = name .. '|r'
  else
    fields[#fields + 1] = name .. '|w'; fields[#fields + 1] = name .. '|c'; fields[#fields + 1] = name .. '|p'
  end
end
fields[#fields + 1] = '|e'
fields[#fields + 1] = '|b'
local v = redis.call('HMGET', k, unpack(fields))
local e = num(v[#fields - 1]) or 0
local state, oks, writes = {}, {}, {}
local all = true
local full = now
local f = 1
local kinds = {}
for i = 0, n - 1 do
  local a = 3 + 5 * i
  local cap, per, lim = num(ARGV[a + 2]), num(ARGV[a + 3]), num(ARGV[a + 4])
  if ARGV[a] == 'g' then
    local tt, r = num(v[f]) or 0, num(v[f + 1]) or 0
    if tt < now then tt = now; r = 0 end
    local d = (tt - now) * lim + r
    local ok = cost <= cap and d <= (cap - cost) * per
    state[#state + 1] = d
    oks[#oks + 1] = ok and 1 or 0
    if not ok then all = false end
    local D = d + cost * per
    local q = floor(D / lim)
    local m = D - q * lim
    if m < 0 then q = q - 1; m = m + lim elseif m >= lim then q = q + 1; m = m - lim end
    writes[#writes + 1] = fields[f]; writes[#writes + 1] = fmt('%d', now + q)
    writes[#writes + 1] = fields[f + 1]; writes[#writes + 1] = fmt('%d', m)
    local at = now + q + (m > 0 and 1 or 0)
    if at > full then full = at end
    f = f + 2
  else
    local w = floor(now / per)
    local sw = num(v[f])
    local c, p = 0, 0
    if sw == w then c = num(v[f + 1]) or 0; p = num(v[f + 2]) or 0 elseif sw == w - 1 then p = num(v[f + 1]) or 0 end
    local room = cap - c - cost
    local ok = room >= 0 and p * (per - (now - w * per)) <= room * per
    state[#state + 1] = c; state[#state + 1] = p
    oks[#oks + 1] = ok and 1 or 0
    if not ok then all = false end
    writes[#writes + 1] = fields[f]; writes[#writes + 1] = fmt('%d', w)
    writes[#writes + 1] = fields[f + 1]; writes[#writes + 1] = fmt('%d', c + cost)
    writes[#writes + 1] = fields[f + 2]; writes[#writes + 1] = fmt('%d', p)
    local at = (w + 2) * per
    if at > full then full = at end
    f = f + 3
  end
end
local reply = { now, all and 1 or 0, 0 }
for i = 1, #state do reply[#reply + 1] = state[i] end
if not all then
  for i = 1, #oks do reply[#reply + 1] = oks[i] end
  return reply
end
if full > e then
  local slack = floor((full - now) / 2)
  if slack < 1000 then slack = 1000 end
  writes[#writes + 1] = '|e'; writes[#writes + 1] = fmt('%d', full + slack)
  redis.call('HSET', k, unpack(writes))
  redis.call('PEXPIRE', k, full + slack - now)
else
  redis.call('HSET', k, unpack(writes))
end
return reply
`

const sha1 = (s: string) => createHash("sha1").update(s).digest("hex")
const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const run = `bench:script:${process.pid}:${Date.now()}`

const main = async () => {
  const plan = QuotaConfig.compile(
    await Effect.runPromise(
      Options.decode(
        "bench",
        QuotaConfig.Plan
      )({
        tiers: [
          { name: "spike", algorithm: "gcra", limit: 1_000_000_000, period: "1 hour", burst: 1_000_000_000 },
          { name: "count", algorithm: "sliding-window", limit: 1_000_000_000, period: "1 hour" }
        ]
      })
    )
  )
  const generated = scriptFor(plan)
  const redis = new Redis(url, { enableAutoPipelining: false })
  await redis.script("LOAD", generated)
  await redis.script("LOAD", STATIC)
  const genSha = sha1(generated)
  const staticSha = sha1(STATIC)
  const genArgs = (i: number) => [`${run}:{c${i % 1000}}`, "1", ...plan.redisArgs.slice(1)]
  const tiers = tierSpecArgs(plan)
  const staticArgs = (i: number) => [`${run}:{c${i % 1000}}`, "1", "0", ...tiers]
  // the two agree on a check
  const a = await redis.evalsha(genSha, 1, `${run}:{agree1}`, ...genArgs(0).slice(1))
  const b = await redis.evalsha(staticSha, 1, `${run}:{agree2}`, ...staticArgs(0).slice(1))
  if (JSON.stringify((a as Array<number>).slice(1)) !== JSON.stringify((b as Array<number>).slice(1)))
    throw new Error(`replies differ: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`)
  const round = async (sha: string, argsOf: (i: number) => Array<string>, n: number) => {
    let next = 0
    const start = performance.now()
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        while (next < n) {
          const i = next++
          await redis.evalsha(sha, 1, ...argsOf(i))
        }
      })
    )
    return performance.now() - start
  }
  const totals = { generated: 0, static: 0 }
  const N = 10_000
  for (let r = 0; r < 12; r++) {
    const first = r % 2 === 0
    const g = first ? await round(genSha, genArgs, N) : 0
    const s = await round(staticSha, staticArgs, N)
    const g2 = first ? 0 : await round(genSha, genArgs, N)
    if (r >= 2) {
      totals.generated += g + g2
      totals.static += s
    }
  }
  const keys = await redis.keys(`${run}:*`)
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500))
  await redis.quit()
  console.log(
    JSON.stringify({
      checksPerSecond: {
        generated: Math.round((10 * N) / (totals.generated / 1000)),
        static: Math.round((10 * N) / (totals.static / 1000))
      }
    })
  )
}
main().then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
