/**
 * The Redis quota script, three ways, on the same two-tier plan and the same packed state:
 * - `baked`: generated for the plan, its numbers written in (what the store ships for the
 *   first 128 distinct plans); the check sends only the cost;
 * - `shape`: generated for the plan's shape, the numbers sent as arguments (the store's script
 *   for plans beyond those 128);
 * - `static`: one script for every plan, looping over the tiers (ids and numbers as
 *   arguments).
 * Rounds in turn; per variant the checks per second with 100 EVALSHA in flight and the Redis
 * time per call (`INFO commandstats`). Prints JSON. `npm run bench:quota-script`
 */
import { Options } from "@sluice/core"
import { QuotaConfig } from "@sluice/quota"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { Redis } from "ioredis"
import { scriptFor, tierSpecArgs } from "@sluice/kernel/quota/RedisScript"

/** the check over the packed state, looping over ARGV's tiers: id, capacity, period, limit */
const STATIC = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local k = KEYS[1]
local num, floor = tonumber, math.floor
local cost = num(ARGV[1])
local n = (#ARGV - 2) / 4
local e, b, s = 0, 0, {}
local v = redis.pcall('GET', k)
if type(v) == 'string' then
  local count = #v / 8
  local all = { struct.unpack('<' .. string.rep('d', count), v) }
  e, b = all[1], all[2]
  local i = 3
  while i <= count do
    local size = all[i] % 2 == 0 and 2 or 3
    s[all[i]] = { all[i + 1], all[i + 2], all[i + 3] }
    i = i + 1 + size
  end
end
local reply, oks, vals = { now, 1, 0 }, {}, { 0, b }
local all = true
local full = now
for i = 0, n - 1 do
  local a = 3 + 4 * i
  local id, cap, per, lim = num(ARGV[a]), num(ARGV[a + 1]), num(ARGV[a + 2]), num(ARGV[a + 3])
  local x = s[id]
  if id % 2 == 0 then
    local tt, r = 0, 0
    if x then tt, r = x[1], x[2] end
    if tt < now then tt = now; r = 0 end
    local d = (tt - now) * lim + r
    local ok = cost <= cap and d <= (cap - cost) * per
    reply[#reply + 1] = d
    oks[#oks + 1] = ok and 1 or 0
    if not ok then all = false end
    local D = d + cost * per
    local q = floor(D / lim)
    local m = D - q * lim
    if m < 0 then q = q - 1; m = m + lim elseif m >= lim then q = q + 1; m = m - lim end
    vals[#vals + 1] = id; vals[#vals + 1] = now + q; vals[#vals + 1] = m
    local at = now + q + (m > 0 and 1 or 0)
    if at > full then full = at end
  else
    local w = floor(now / per)
    local c, p = 0, 0
    if x then
      if x[1] == w then c, p = x[2], x[3] elseif x[1] == w - 1 then p = x[2] end
    end
    local room = cap - c - cost
    local ok = room >= 0 and p * (per - (now - w * per)) <= room * per
    reply[#reply + 1] = c; reply[#reply + 1] = p
    oks[#oks + 1] = ok and 1 or 0
    if not ok then all = false end
    vals[#vals + 1] = id; vals[#vals + 1] = w; vals[#vals + 1] = c + cost; vals[#vals + 1] = p
    local at = (w + 2) * per
    if at > full then full = at end
  end
end
if not all then
  reply[2] = 0
  for i = 1, #oks do reply[#reply + 1] = oks[i] end
  return reply
end
local fmt = '<' .. string.rep('d', #vals)
if full > e then
  local slack = floor((full - now) / 2)
  if slack < 1000 then slack = 1000 end
  vals[1] = full + slack
  redis.call('SET', k, struct.pack(fmt, unpack(vals)), 'PX', full + slack - now)
else
  vals[1] = e
  redis.call('SET', k, struct.pack(fmt, unpack(vals)), 'KEEPTTL')
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
  const redis = new Redis(url, { enableAutoPipelining: false })
  const key = (variant: string, i: number) => `${run}:${variant}:{c${i % 1000}}`
  const variants = {
    baked: { script: scriptFor(plan, true), args: (i: number) => [key("b", i), "1"] },
    shape: {
      script: scriptFor(plan, false),
      args: (i: number) => [key("s", i), "1", ...plan.redisArgs.slice(1)]
    },
    static: { script: STATIC, args: (i: number) => [key("t", i), "1", "0", ...tierSpecArgs(plan)] }
  }
  const entries = Object.entries(variants).map(([name, v]) => ({ name, sha: sha1(v.script), ...v }))
  for (const v of entries) await redis.script("LOAD", v.script)
  // the three agree on a check (all but Redis' time)
  const replies = await Promise.all(
    entries.map(async (v) => ((await redis.evalsha(v.sha, 1, ...v.args(0))) as Array<number>).slice(1))
  )
  for (const reply of replies)
    if (JSON.stringify(reply) !== JSON.stringify(replies[0]))
      throw new Error(`replies differ: ${JSON.stringify(replies)}`)
  const round = async (v: (typeof entries)[number], n: number) => {
    await redis.config("RESETSTAT")
    let next = 0
    const start = performance.now()
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        while (next < n) await redis.evalsha(v.sha, 1, ...v.args(next++))
      })
    )
    const ms = performance.now() - start
    const stats = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec((await redis.info("commandstats")) as string)!
    return { ms, usec: Number(stats[2]) }
  }
  const totals = new Map(entries.map((v) => [v.name, { ms: 0, usec: 0, checks: 0 }]))
  const N = 10_000
  for (let r = 0; r < 12; r++) {
    for (let j = 0; j < entries.length; j++) {
      const v = entries[(r + j) % entries.length]!
      const { ms, usec } = await round(v, N)
      // two warm-up rounds
      if (r < 2) continue
      const total = totals.get(v.name)!
      total.ms += ms
      total.usec += usec
      total.checks += N
    }
  }
  const keys = await redis.keys(`${run}:*`)
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500))
  await redis.quit()
  const out = (pick: (t: { ms: number; usec: number; checks: number }) => number) =>
    Object.fromEntries(Array.from(totals, ([name, t]) => [name, pick(t)]))
  console.log(
    JSON.stringify({
      checksPerSecond: out((t) => Math.round(t.checks / (t.ms / 1000))),
      redisUsecPerCheck: out((t) => Number((t.usec / t.checks).toFixed(2)))
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
