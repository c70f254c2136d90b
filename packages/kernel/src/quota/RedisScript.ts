/**
 * The Redis quota store's Lua, generated here, and the decoding of its replies: one script per
 * plan decides every tier at once on one key per client, in Redis, with the arithmetic of
 * `QuotaPlan.ts` (integers in whole milliseconds, exact in Lua's doubles), so the Redis and memory
 * stores decide alike. Also the static script for penalties, rewards and blocks, the packed
 * little-endian layout of a client's stored state, and which plans get a script with their
 * numbers written in. Sending the scripts (EVALSHA, NOSCRIPT, the connection) is the binding's.
 *
 * @since 0.2.0
 */
import * as Sha1 from "../hash/Sha1.js"
import type { CompiledPlan, CompiledTier, StoreResult, TierDecision, TierView } from "./QuotaPlan.js"
import { blockTiers, decideTier, startBlock, stateAfter } from "./QuotaPlan.js"

const tierIds = new WeakMap<Pick<CompiledTier, "name" | "algorithm">, number>()

/**
 * A tier's id in the stored state: 48 bits of the SHA-1 of its algorithm and name, times two,
 * plus one for a sliding window (so the id's parity tells how many numbers follow it). Below
 * 2^49: exact in a double and in Lua.
 *
 * @since 0.2.0
 */
export const tierId = (tier: Pick<CompiledTier, "name" | "algorithm">): number => {
  let id = tierIds.get(tier)
  if (id === undefined) {
    id =
      parseInt(Sha1.hex(`${tier.algorithm}\u0000${tier.name}`).slice(0, 12), 16) * 2 +
      (tier.algorithm === "gcra" ? 0 : 1)
    tierIds.set(tier, id)
  }
  return id
}

/** How many doubles a client's state holds for a plan: expiry, block, and per tier its id and state. */
const stateDoubles = (plan: CompiledPlan): number => 2 + plan.tiers.length + plan.stateSize

/**
 * Lua that reads a stored state of ANY plan (`v`, a string) into `e`, `b` and `s` (tier id →
 * its numbers), for a plan that changed (tiers that kept their name and algorithm keep their
 * state, as in the memory store) and for the adjust script. Anything that does not parse as a
 * whole (or holds more than 4,000 numbers: Lua's stack) is ignored: a new client's state.
 */
const READ_ANY = `
  local n = #v / 8
  if n >= 2 and n <= 4000 and n == floor(n) then
    local all = { struct.unpack('<' .. string.rep('d', n), v) }
    local i, found = 3, {}
    while i <= n do
      local id = all[i]
      if id ~= id then break end
      local size = id % 2 == 0 and 2 or 3
      if i + size > n then break end
      found[id] = { all[i + 1], all[i + 2], all[i + 3] }
      i = i + 1 + size
    end
    if i == n + 1 and all[1] >= 0 and all[2] >= 0 then e, b, s = all[1], all[2], found end
  end`

/**
 * The floor argument that says "the caller holds a floor for this client" without sending it
 * (see {@link scriptFor}).
 *
 * @since 1.0.0
 */
export const KNOWN_CLIENT = "k"

/**
 * The `allowed` field of a reply to a check sent with {@link KNOWN_CLIENT} whose key was missing:
 * nothing decided, nothing written; send the check again with the floor.
 *
 * @since 1.0.0
 */
export const LOST = 4

/**
 * The Lua script that decides every tier of a plan at once, on ONE key per client. It is
 * generated for the plan: straight-line code, so Redis runs no loop; with `baked` the plan's
 * numbers are written into it (the check sends only the cost), otherwise they come as
 * arguments and plans of the same shape (tier names and algorithms, in order) share it.
 *
 * The arithmetic is that of `QuotaPlan.ts`, in whole milliseconds and integers only (Lua's
 * numbers are doubles: every integer formed stays below 2^53, which the plan schema
 * guarantees), so the memory and Redis stores decide alike, decision for decision. Time is
 * `TIME` floored to the millisecond, read once.
 *
 * State: one string per client, little-endian doubles (`struct.pack`): when the key's TTL runs
 * out (ms), blocked until (ms), then per tier its id (`tierId`) and its numbers (gcra: the
 * theoretical arrival time's whole milliseconds and the remainder in 1/limit ms;
 * sliding-window: window number, current and previous count). One `GET` reads it; only an
 * admitted request (or a denial that starts a block) writes, with one `SET` that keeps the TTL
 * unless it must grow (then it is set with a slack of half as long again, at least a second).
 * The numbers written into the script, one packed string and one `GET`/`SET` take the least
 * Redis time per check of the layouts measured (`bench/quota-script.ts`; figures in
 * bench/README.md): less than numbers as arguments, a hash with a field per number, or a static
 * script looping over the tiers. A value of another plan (the
 * client's plan changed) is read by `READ_ANY`; a key of another type (0.1's hash) is read as no
 * state and replaced on the next write.
 *
 * ARGV: cost (0: a peek, decided as one unit, nothing written), then unless baked the block
 * duration (ms, 0: none) and per tier capacity, period (ms), limit, then optionally the floor:
 * blocked until (ms) and per tier the state as the caller last knew it (gcra `t, r`;
 * sliding-window window, current, previous). A Redis that restarted without persistence, or a
 * replica promoted before the last writes reached it, has lost some of the state; the floor puts
 * it back: every tier is raised to the larger of the two (never the sum), and a raised state is
 * written even when the check is denied. Instead of the floor the caller may send
 * {@link KNOWN_CLIENT} (one argument: it holds a floor for this client): a missing key is then
 * answered `{ time, LOST }`, undecided and unwritten, and the caller sends the check again with
 * the floor, so a check carries the floor only when Redis lost the client's key. Reply: time (ms), allowed (1/0, plus 2 when the floor
 * raised the state), blocked for (ms: 0 when not blocked, negated when this denial starts the block, whose
 * denying tiers then report at least the block: `startBlock`), the state before consumption rolled to that
 * time (gcra: the debt `(tat − time) × limit`; sliding-window: current, previous), then, when
 * not allowed, per tier 1/0 whether it admits. The client derives remaining, reset and
 * retry-after from it with the memory store's functions.
 *
 * @since 0.2.0
 */
export const scriptFor = (plan: CompiledPlan, baked: boolean): string => {
  const doubles = stateDoubles(plan)
  const format = `'<${"d".repeat(doubles)}'`
  const lines: Array<string> = [
    "local t = redis.call('TIME')",
    "local now = t[1] * 1000 + math.floor(t[2] / 1000)",
    "local k = KEYS[1]",
    "local num, floor = tonumber, math.floor",
    "local cost = num(ARGV[1])",
    "local peek = cost == 0",
    "if peek then cost = 1 end"
  ]
  /** the stored numbers, in order after e and b */
  const stored: Array<string> = []
  const ids: Array<string> = []
  /** a new client's values of `stored` */
  const initial: Array<string> = []
  const adopt: Array<string> = []
  /** each tier's decision, after the state is read */
  const decide: Array<string> = []
  const state: Array<string> = []
  const oks: Array<string> = []
  const consume: Array<string> = []
  /** the numbers written after e and b when the request is admitted */
  const written: Array<string> = []
  /** the numbers written after e and b when only a block starts */
  const kept: Array<string> = []
  const fulls: Array<string> = []
  /** raising each tier to the floor sent with the check */
  const raise: Array<string> = []
  /** when each tier of the state as it stands (`kept`) is full again */
  const keptFulls: Array<string> = []
  // where the floor starts in ARGV: after the cost and, unless baked, the plan's numbers
  const floorAt = baked ? 2 : 3 + 3 * plan.tiers.length
  let floorArg = floorAt + 1
  plan.tiers.forEach((tier, i) => {
    const n = i + 1
    const a = 3 + 3 * i
    const id = String(tierId(tier))
    ids.push(id)
    oks.push(`ok${n}`)
    const value = (literal: number, arg: number) => (baked ? String(literal) : `num(ARGV[${arg}])`)
    lines.push(`local cap${n}, per${n} = ${value(tier.capacity, a)}, ${value(tier.periodMs, a + 1)}`)
    if (tier.algorithm === "gcra") {
      lines.push(`local lim${n} = ${value(tier.limit, a + 2)}`)
      stored.push(`x${n}`, `t${n}`, `r${n}`)
      initial.push("nil", "0", "0")
      adopt.push(`x = s[${id}]; if x then t${n}, r${n} = x[1], x[2] end`)
      decide.push(
        `if t${n} < now then t${n} = now; r${n} = 0 end`,
        `local d${n} = (t${n} - now) * lim${n} + r${n}`,
        `local ok${n} = cost <= cap${n} and d${n} <= (cap${n} - cost) * per${n}`
      )
      state.push(`d${n}`)
      consume.push(
        `local D${n} = d${n} + cost * per${n}`,
        `local q${n} = floor(D${n} / lim${n})`,
        `local m${n} = D${n} - q${n} * lim${n}`,
        `if m${n} < 0 then q${n} = q${n} - 1; m${n} = m${n} + lim${n} elseif m${n} >= lim${n} then q${n} = q${n} + 1; m${n} = m${n} - lim${n} end`
      )
      written.push(id, `now + q${n}`, `m${n}`)
      kept.push(id, `t${n}`, `r${n}`)
      fulls.push(`now + q${n} + (m${n} > 0 and 1 or 0)`)
      keptFulls.push(`t${n} + (r${n} > 0 and 1 or 0)`)
      raise.push(
        `  local ft, fr = num(ARGV[${floorArg}]), num(ARGV[${floorArg + 1}])`,
        `  if (ft > now or (ft == now and fr > 0)) and (ft > t${n} or (ft == t${n} and fr > r${n})) then t${n}, r${n}, raised = ft, fr, true end`
      )
      floorArg += 2
    } else {
      stored.push(`x${n}`, `sw${n}`, `c${n}`, `p${n}`)
      initial.push("nil", "nil", "0", "0")
      adopt.push(`x = s[${id}]; if x then sw${n}, c${n}, p${n} = x[1], x[2], x[3] end`)
      decide.push(
        `local w${n} = floor(now / per${n})`,
        `if sw${n} ~= w${n} then if sw${n} == w${n} - 1 then p${n} = c${n} else p${n} = 0 end; c${n} = 0 end`,
        `local room${n} = cap${n} - c${n} - cost`,
        `local ok${n} = room${n} >= 0 and p${n} * (per${n} - (now - w${n} * per${n})) <= room${n} * per${n}`
      )
      state.push(`c${n}`, `p${n}`)
      written.push(id, `w${n}`, `c${n} + cost`, `p${n}`)
      kept.push(id, `w${n}`, `c${n}`, `p${n}`)
      fulls.push(`(w${n} + 2) * per${n}`)
      keptFulls.push(`(w${n} + 2) * per${n}`)
      // both rolled to the later window, then the larger counts
      raise.push(
        `  local fw, fc, fp = num(ARGV[${floorArg}]), num(ARGV[${floorArg + 1}]), num(ARGV[${floorArg + 2}])`,
        `  if (fc > 0 or fp > 0) and fw >= floor(now / per${n}) - 1 then`,
        `    if sw${n} == nil then sw${n} = fw`,
        `    elseif fw < sw${n} then if fw == sw${n} - 1 then fp = fc else fp = 0 end; fc = 0`,
        `    elseif fw > sw${n} then if sw${n} == fw - 1 then p${n} = c${n} else p${n} = 0 end; c${n} = 0; sw${n} = fw end`,
        `    if fc > c${n} then c${n}, raised = fc, true end`,
        `    if fp > p${n} then p${n}, raised = fp, true end`,
        `  end`
      )
      floorArg += 3
    }
  })
  const newClient = `e, b, ${stored.join(", ")} = 0, 0, ${initial.join(", ")}`
  lines.push(
    `local ${newClient}`,
    "local v = redis.pcall('GET', k)",
    "if type(v) == 'string' then",
    `  if #v == ${8 * doubles} then e, b, ${stored.join(", ")} = struct.unpack(${format}, v) end`,
    `  if ${ids.map((id, i) => `x${i + 1} ~= ${id}`).join(" or ")} then`,
    `    ${newClient}`,
    "    local s = {}",
    READ_ANY.replace(/^\n/, "").replace(/^/gm, "  "),
    "    local x",
    ...adopt.map((line) => `    ${line}`),
    "  end",
    "end",
    // the floor sent with the check (the state this client had, as the caller last knew it: a
    // Redis restarted or failed over may have lost it): the larger of the two, never the sum
    "local raised = false",
    // the caller knows this client (it holds a floor) but sent none: a missing key is a lost
    // state, answered as such, undecided, for the caller to send the floor
    `if ARGV[${floorAt}] == '${KNOWN_CLIENT}' then`,
    `  if type(v) ~= 'string' then return { now, ${LOST} } end`,
    `elseif ARGV[${floorAt}] then`,
    `  local fb = num(ARGV[${floorAt}])`,
    "  if fb > now and fb > b then b, raised = fb, true end",
    ...raise,
    "end",
    ...decide
  )
  const keptFull = (indent: string) => [
    `${indent}local kf = ${keptFulls[0]}`,
    ...keptFulls.slice(1).map((expr) => `${indent}if ${expr} > kf then kf = ${expr} end`),
    `${indent}if b > kf then kf = b end`
  ]
  const all = oks.join(" and ")
  const okList = oks.map((ok) => `${ok} and 1 or 0`).join(", ")
  const set = (numbers: Array<string>, ttl: string) =>
    `redis.call('SET', k, struct.pack(${format}, e, b, ${numbers.join(", ")}), ${ttl})`
  lines.push(
    // a raised state is written whatever the decision, so an instance that does not know the
    // floor finds it
    "if raised then",
    ...keptFull("  "),
    "  if kf > now then",
    "    local slack = floor((kf - now) / 2)",
    "    if slack < 1000 then slack = 1000 end",
    "    e = kf + slack",
    `    ${set(kept, "'PX', e - now")}`,
    "  end",
    "end",
    "local flag = raised and 2 or 0",
    "if b > now then",
    `  return { now, flag, b - now, ${state.join(", ")}, ${okList} }`,
    "end",
    `local all = ${all}`,
    "if peek then",
    `  if all then return { now, 1 + flag, 0, ${state.join(", ")} } end`,
    `  return { now, flag, 0, ${state.join(", ")}, ${okList} }`,
    "end",
    "if not all then",
    // a denial that starts a block (none when the plan's numbers are written in and it has no blockFor)
    ...(baked && plan.blockForMs === 0
      ? []
      : [
          `  local block = ${baked ? String(plan.blockForMs) : "num(ARGV[2])"}`,
          "  if block > 0 then",
          "    b = now + block",
          "    if b > e then",
          "      e = b",
          `      ${set(kept, "'PX', block")}`,
          "    else",
          `      ${set(kept, "'KEEPTTL'")}`,
          "    end",
          `    return { now, flag, -block, ${state.join(", ")}, ${okList} }`,
          "  end"
        ]),
    `  return { now, flag, 0, ${state.join(", ")}, ${okList} }`,
    "end",
    ...consume,
    // every tier is full again at `full`; the TTL is set past it with a slack (half as long
    // again, at least a second), so most checks find it long enough and keep it
    `local full = ${fulls[0]}`,
    ...fulls.slice(1).map((expr) => `if ${expr} > full then full = ${expr} end`),
    "if full > e then",
    "  local slack = floor((full - now) / 2)",
    "  if slack < 1000 then slack = 1000 end",
    "  e = full + slack",
    `  ${set(written, "'PX', e - now")}`,
    "else",
    `  ${set(written, "'KEEPTTL'")}`,
    "end",
    `return { now, 1 + flag, 0, ${state.join(", ")} }`
  )
  return lines.join("\n") + "\n"
}

/**
 * Penalty, reward and block: a static script looping over the tiers (not on the hot path).
 * ARGV: units (added to every tier's count, clamped to [0, capacity]; negative: a reward),
 * block duration (ms, 0: none), then per tier: id, capacity, period (ms), limit. The state is
 * read with `READ_ANY` and written in the plan's layout; the key is deleted when the result
 * equals a new client's state.
 *
 * @since 0.2.0
 */
export const ADJUST_SCRIPT = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local k = KEYS[1]
local num, floor = tonumber, math.floor
local units = num(ARGV[1])
local block = num(ARGV[2])
local e, b, s = 0, 0, {}
local v = redis.pcall('GET', k)
if type(v) == 'string' then${READ_ANY}
end
if block > 0 and now + block > b then b = now + block end
local vals = { 0, b }
local full = now
local i = 3
while i <= #ARGV do
  local id = num(ARGV[i])
  local cap, per, lim = num(ARGV[i + 1]), num(ARGV[i + 2]), num(ARGV[i + 3])
  local x = s[id]
  if id % 2 == 0 then
    local tt, r = 0, 0
    if x then tt, r = x[1], x[2] end
    if tt < now then tt = now; r = 0 end
    local d = (tt - now) * lim + r + units * per
    if d < 0 then d = 0 end
    if d > cap * per then d = cap * per end
    local q = floor(d / lim)
    local m = d - q * lim
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
    c = c + units
    if c < 0 then c = 0 end
    if c > cap then c = cap end
    vals[#vals + 1] = id; vals[#vals + 1] = w; vals[#vals + 1] = c; vals[#vals + 1] = p
    local at = now
    if c > 0 then at = (w + 2) * per elseif p > 0 then at = (w + 1) * per end
    if at > full then full = at end
  end
  i = i + 4
end
if b > full then full = b end
if full <= now then
  redis.call('DEL', k)
  return 0
end
local slack = floor((full - now) / 2)
if slack < 1000 then slack = 1000 end
vals[1] = full + slack
redis.call('SET', k, struct.pack('<' .. string.rep('d', #vals), unpack(vals)), 'PX', full + slack - now)
return 1
`

/**
 * The adjust script's per-tier arguments: id, capacity, period (ms), limit.
 *
 * @since 0.2.0
 */
export const tierSpecArgs = (plan: CompiledPlan): Array<string> => {
  const args: Array<string> = []
  for (const tier of plan.tiers)
    args.push(String(tierId(tier)), String(tier.capacity), String(tier.periodMs), String(tier.limit))
  return args
}

/**
 * The key of a client's state: the store's prefix and the client's id as a hash tag, so every
 * key a script touches for a client is in one Redis Cluster slot.
 *
 * @since 0.2.0
 */
export const keyOf = (prefix: string, client: string): string => prefix + "{" + client + "}"

/**
 * The arguments of a check's `EVALSHA`: index 0 is left for the script's name (its SHA-1, or
 * the script itself after NOSCRIPT), then `numkeys`, the key, the cost and, unless the script
 * has the plan's numbers written in, the rest of {@link CompiledPlan.redisArgs}, then the floor, if
 * any: the client's block and state in the plan's layout as the caller last knew them (the
 * script raises the stored state to it: the larger of the two, never the sum), or
 * {@link KNOWN_CLIENT} in its place.
 *
 * @since 0.2.0
 */
export const checkArgs = (
  script: CheckScript,
  plan: CompiledPlan,
  key: string,
  cost: number,
  floor?: ArrayLike<number> | typeof KNOWN_CLIENT
): Array<string> => {
  const tail = plan.redisArgs
  const size = script.baked ? 4 : 3 + tail.length
  if (floor === KNOWN_CLIENT) {
    const args: Array<string> = new Array(size + 1)
    args[1] = "1"
    args[2] = key
    args[3] = cost === 1 ? "1" : String(cost)
    if (!script.baked) for (let i = 1; i < tail.length; i++) args[3 + i] = tail[i]!
    args[size] = KNOWN_CLIENT
    return args
  }
  const args: Array<string> = new Array(floor === undefined ? size : size + floor.length)
  args[1] = "1"
  args[2] = key
  args[3] = cost === 1 ? "1" : String(cost)
  if (!script.baked) for (let i = 1; i < tail.length; i++) args[3 + i] = tail[i]!
  if (floor !== undefined) for (let i = 0; i < floor.length; i++) args[size + i] = String(floor[i])
  return args
}

/**
 * The arguments of {@link ADJUST_SCRIPT} (index 0 left for its name, as {@link checkArgs}):
 * `numkeys`, the key, the units to add (negative: give back), the block (ms, 0: none), then per
 * tier its id, capacity, period (ms) and limit.
 *
 * @since 0.2.0
 */
export const adjustArgs = (
  plan: CompiledPlan,
  key: string,
  units: number,
  blockMs: number
): Array<string> => ["", "1", key, String(units), String(blockMs), ...tierSpecArgs(plan)]

/**
 * What a failed Redis command says of Redis, from its message: it timed out (ioredis' "Command
 * timed out"; node-redis' "Connection timeout", "Socket timeout …", "Command timeout …", and the
 * empty `TimeoutError` it fails a command with once the command's own timeout has passed, read by
 * its name), it cannot be reached (refused, reset, closed, not writeable, offline, loading, a
 * cluster or replica down), or any other error.
 *
 * @since 0.2.0
 */
export const errorReason = (message: string): "unavailable" | "error" | "timeout" =>
  /timed out|^(?:Connection|Socket|Command) timeout|^TimeoutError$/i.test(message)
    ? "timeout"
    : /writeable|closed|offline|Disconnects client|ECONNREFUSED|ECONNRESET|EPIPE|not connected|Connection is closed|LOADING|MasterDown|CLUSTERDOWN|root nodes are unavailable/i.test(
          message
        )
      ? "unavailable"
      : "error"

/**
 * A client's stored state decoded (for tests and debugging): the key's expiry and block (ms)
 * and per tier id its numbers.
 *
 * @since 0.2.0
 */
export const decodeState = (
  value: Uint8Array
): {
  readonly expiresAt: number
  readonly blockedUntil: number
  readonly tiers: Map<number, Array<number>>
} => {
  const numbers: Array<number> = []
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength)
  for (let at = 0; at + 8 <= value.length; at += 8) numbers.push(view.getFloat64(at, true))
  const tiers = new Map<number, Array<number>>()
  for (let i = 2; i < numbers.length;) {
    const size = numbers[i]! % 2 === 0 ? 2 : 3
    tiers.set(numbers[i]!, numbers.slice(i + 1, i + 1 + size))
    i += 1 + size
  }
  return { expiresAt: numbers[0]!, blockedUntil: numbers[1]!, tiers }
}

/** Decodes a script reply into the decisions (the memory store's functions on Redis' state). @since 0.2.0 */
export const parseReply = (reply: ReadonlyArray<number>, plan: CompiledPlan, cost: number): StoreResult => {
  const now = reply[0]!
  // 1: admitted; 2: the state was raised to the floor sent with the check
  const allowed = (reply[1]! & 1) === 1
  const raised = reply[1]! >= 2
  const blockedMs = reply[2]!
  const tiers = plan.tiers
  const peek = cost === 0
  const k = peek ? 1 : cost
  const consumed = allowed && !peek
  const decisions: Array<TierDecision> = new Array(tiers.length)
  let r = 3
  // the reply holds one number per gcra tier and two per sliding-window tier
  const okAt = 3 + plan.stateSize - tiers.length
  const views: Array<TierView> = new Array(tiers.length)
  for (let i = 0; i < tiers.length; i++) {
    const tier = tiers[i]!
    const view: TierView = { a: 0, b: 0, start: 0 }
    views[i] = view
    if (tier.algorithm === "gcra") {
      view.a = reply[r++]!
      view.b = 0
      view.start = 0
    } else {
      view.a = reply[r++]!
      view.b = reply[r++]!
      view.start = Math.floor(now / tier.periodMs) * tier.periodMs
    }
    // per-tier verdicts follow unless every tier admitted
    const ok = allowed || reply[okAt + i] === 1
    decisions[i] = decideTier(tier, view, k, now, ok, consumed)
  }
  const state = stateAfter(tiers, views, plan.stateSize, k, consumed, now)
  const result: StoreResult =
    blockedMs > 0
      ? { allowed: false, tiers: blockTiers(decisions, blockedMs), now, blockedMs, state }
      : blockedMs < 0
        ? { ...startBlock({ allowed, tiers: decisions, now }, -blockedMs), state }
        : { allowed, tiers: decisions, now, state }
  return raised ? { ...result, raised } : result
}

/**
 * How many distinct plans get a script with their numbers written in; the plans beyond share one
 * script per shape that takes the numbers as arguments (a little more Redis time per check).
 * Redis keeps every loaded script until it restarts or `SCRIPT FLUSH`: a bound keeps
 * thousands of per-client plans from loading thousands of scripts (about 3 KB each).
 *
 * @since 0.2.0
 */
export const MAX_BAKED = 128

/** A check script: its text, SHA1, and whether the plan's numbers are written in. @since 0.2.0 */
export interface CheckScript {
  readonly script: string
  readonly sha: string
  readonly baked: boolean
}

/** The generated scripts, by plan (numbers written in) up to `MAX_BAKED`, then by shape. @since 0.2.0 */
export class ScriptCache {
  private readonly byPlan = new WeakMap<CompiledPlan, CheckScript>()
  private readonly byContent = new Map<string, CheckScript>()
  private baked = 0
  /** called with each script the first time it is made */
  onNew: ((script: string) => void) | undefined = undefined
  constructor(readonly maxBaked: number = MAX_BAKED) {}

  get(plan: CompiledPlan): CheckScript {
    const known = this.byPlan.get(plan)
    if (known !== undefined) return known
    // plans equal in content (the same plan decoded twice) share a script
    const numbers = `${plan.shape}|${plan.redisArgs.slice(1).join(",")}`
    let entry = this.byContent.get(numbers)
    if (entry === undefined && this.baked >= this.maxBaked) entry = this.byContent.get(plan.shape)
    if (entry === undefined) {
      const baked = this.baked < this.maxBaked
      const script = scriptFor(plan, baked)
      entry = { script, sha: Sha1.hex(script), baked }
      if (baked) this.baked++
      this.byContent.set(baked ? numbers : plan.shape, entry)
      this.onNew?.(script)
    }
    this.byPlan.set(plan, entry)
    return entry
  }

  get scripts(): ReadonlyArray<string> {
    return Array.from(this.byContent.values(), (entry) => entry.script)
  }
}

/**
 * The SHA-1 of {@link ADJUST_SCRIPT}, its name for `EVALSHA`.
 *
 * @since 0.2.0
 */
export const ADJUST_SHA = Sha1.hex(ADJUST_SCRIPT)
