import * as RedisQpsSensor from "@sluice/adaptive/RedisQpsSensor"
import * as ProportionalSampler from "@sluice/adaptive/ProportionalSampler"
import * as IoRedisQpsSensor from "@sluice/adaptive/IoRedisQpsSensor"
import { describe, expect, it } from "@effect/vitest"
import { NodeRedis } from "@effect/platform-node"
import { Context, Duration, Effect, Exit, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { Redis as IORedis } from "ioredis"
import type { RedisOptions } from "ioredis"
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const T0 = 1_800_000_000_000 // a whole second
const prefix = `sluice:test:qps:${randomUUID()}:`

/** A client the test owns, closed with the scope. */
const ownClient = (target = url, extra: RedisOptions = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const redis = new IORedis(target, { maxRetriesPerRequest: 0, ...extra })
      redis.on("error", () => {})
      return redis
    }),
    (redis) => Effect.sync(() => redis.disconnect())
  )

// the sensor on each client: a connection of its own (ioredis) or Effect's `Redis` from NodeRedis
const transports = [
  {
    name: "ioredis",
    make: (options: IoRedisQpsSensor.IoRedisQpsSensorOptions) => IoRedisQpsSensor.make({ url, ...options })
  },
  {
    name: "NodeRedis",
    make: (options: IoRedisQpsSensor.IoRedisQpsSensorOptions) =>
      Effect.flatMap(Layer.build(NodeRedis.layer({ url })), (context) =>
        Effect.provideContext(RedisQpsSensor.make(options), context)
      )
  }
]

/** each transport its own counters (the tests count from the same instant) */
const prefixOf = (transport: { readonly name: string }) => `${prefix}${transport.name}:`

describe.each(transports)("IoRedisQpsSensor (real Redis, $name)", (transport) => {
  const prefix = prefixOf(transport)
  it.effect("workers on one key see the sum of what they all sent, averaged over complete seconds", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const key = "sum"
      const a = yield* transport.make({ key, prefix, window: 2 })
      const b = yield* transport.make({ key, prefix, window: 2 })
      a.recordUnsafe(T0 + 10, 10)
      b.recordUnsafe(T0 + 500, 20)
      yield* TestClock.adjust("1 second")
      a.recordUnsafe(T0 + 1000, 30)
      b.recordUnsafe(T0 + 1999, 40)
      yield* TestClock.adjust("1400 millis")
      yield* a.measure // flushes a
      const fromB = yield* b.measure // flushes b, reads both
      const fromA = yield* a.measure
      expect(Option.getOrThrow(fromB).qps).toBe(50)
      expect(Option.getOrThrow(fromA)).toEqual({ qps: 50, at: T0 + 2400 })
      const check = yield* ownClient()
      const ttl = yield* Effect.promise(() => check.ttl(IoRedisQpsSensor.keyFor(prefix, key, T0 / 1000)))
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(62)
      expect(
        yield* Effect.promise(() => check.get(IoRedisQpsSensor.keyFor(prefix, key, T0 / 1000 + 1)))
      ).toBe("70")
    })
  )

  it.effect("samplers on a Redis sensor hold a shared goal", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const sensors = yield* Effect.all(
        // the test flushes and updates itself (every 5 s), so the run is deterministic
        [0, 1, 2].map(() => transport.make({ key: "goal", prefix, flushInterval: "1 hour" }))
      )
      const workers = yield* Effect.all(
        sensors.map((sensor) => ProportionalSampler.makeWith({ goal: 60, updatePeriod: "1 hour" }, sensor))
      )
      const sentPerSecond: Array<number> = []
      for (let second = 0; second < 60; second++) {
        let sent = 0
        for (let slice = 0; slice < 4; slice++) {
          const now = T0 + second * 1000 + slice * 250
          for (const w of workers)
            for (let i = 0; i < 30 / 4 + (slice % 2); i++) if (w.sampleUnsafe(now)) sent++
          yield* TestClock.adjust(Duration.millis(250))
        }
        sentPerSecond.push(sent)
        if ((second + 1) % 5 === 0) {
          for (const sensor of sensors) yield* sensor.measure // flush every worker's tally
          for (const w of workers) yield* w.update
        }
      }
      const last = sentPerSecond.slice(-20)
      const mean = last.reduce((x, y) => x + y, 0) / last.length
      expect(mean).toBeGreaterThan(57)
      expect(mean).toBeLessThan(63)
      for (const w of workers) expect((yield* w.state).mode).toBe("tracking")
    })
  )
})

describe("IoRedisQpsSensor (real Redis)", () => {
  it.effect("over NodeRedis: its client closing mid-run turns good readings into missing ones", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const context = yield* Layer.build(NodeRedis.layer({ url }))
      const sensor = yield* Effect.provideContext(
        RedisQpsSensor.make({ key: `midrun-node-${randomUUID()}`, prefix }),
        context
      )
      sensor.recordUnsafe(T0, 8)
      yield* TestClock.adjust("2 seconds")
      expect(Option.getOrThrow(yield* sensor.measure).qps).toBe(4)
      Context.get(context, NodeRedis.NodeRedis).client.destroy()
      sensor.recordUnsafe(T0 + 2000, 8)
      yield* TestClock.adjust("1 second")
      expect(Option.isNone(yield* sensor.measure)).toBe(true)
    })
  )

  it.effect("an unreachable Redis gives no reading, and the sampler goes stale instead of opening up", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const dead = yield* ownClient("redis://127.0.0.1:1", {
        lazyConnect: true,
        enableOfflineQueue: false,
        retryStrategy: () => null
      })
      const sensor = yield* IoRedisQpsSensor.make({
        client: dead,
        key: "dead",
        prefix,
        flushInterval: "1 hour"
      })
      sensor.recordUnsafe(T0, 5)
      yield* TestClock.adjust("3 seconds")
      expect(Option.isNone(yield* sensor.measure)).toBe(true)
      const sampler = yield* ProportionalSampler.makeWith(
        { goal: 10, initialRatio: 0.5, updatePeriod: "1 hour", staleAfter: "10 seconds", staleFloor: 0.2 },
        sensor
      )
      for (let i = 0; i < 6; i++) {
        yield* TestClock.adjust("5 seconds")
        yield* sampler.update
      }
      const state = yield* sampler.state
      expect(state.mode).toBe("stale")
      expect(state.ratio).toBeLessThan(0.5)
      expect(state.ratio).toBeGreaterThanOrEqual(0.2)
    })
  )

  it.effect("Redis going away mid-run turns good readings into missing ones", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const redis = yield* ownClient(url, { enableOfflineQueue: false })
      yield* Effect.promise(
        () =>
          new Promise((resolve) =>
            redis.status === "ready" ? resolve(undefined) : redis.once("ready", resolve)
          )
      )
      const sensor = yield* IoRedisQpsSensor.make({ client: redis, key: "midrun", prefix })
      sensor.recordUnsafe(T0, 8)
      yield* TestClock.adjust("2 seconds")
      expect(Option.getOrThrow(yield* sensor.measure).qps).toBe(4)
      redis.disconnect()
      sensor.recordUnsafe(T0 + 2000, 8)
      yield* TestClock.adjust("1 second")
      expect(Option.isNone(yield* sensor.measure)).toBe(true)
    })
  )

  it.effect("rejects bad options naming the field", () =>
    Effect.gen(function* () {
      const cases: Array<[IoRedisQpsSensor.IoRedisQpsSensorOptions, RegExp]> = [
        [{ url, key: "" }, /key/],
        [{ url, key: "k", window: 0 }, /window/],
        [{ url, key: "k", flushInterval: 0 }, /flushInterval/],
        [{ url, key: "k", timeout: -1 }, /timeout/]
      ]
      for (const [options, field] of cases) {
        const exit = yield* Effect.exit(IoRedisQpsSensor.make(options))
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) expect(String(exit.cause)).toMatch(field)
      }
    })
  )

  it("the package index never loads ioredis (the Redis sensor is a subpath)", () => {
    const src = join(dirname(fileURLToPath(import.meta.url)), "..", "src")
    const seen = new Set<string>()
    const external = new Set<string>()
    const walk = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      const text = readFileSync(file, "utf8")
      for (const m of text.matchAll(/^(?:import|export)[^"']*["']([^"']+)["']/gm)) {
        const spec = m[1]!
        if (spec.startsWith(".")) walk(join(dirname(file), spec.replace(/\.js$/, ".ts")))
        else external.add(spec)
      }
    }
    walk(join(src, "index.ts"))
    expect(seen.size).toBeGreaterThan(5)
    expect(
      [...external].filter((spec) => spec === "ioredis" || spec.startsWith("@sluice/core/Redis"))
    ).toEqual([])
    expect([...seen].some((f) => f.endsWith("IoRedisQpsSensor.ts"))).toBe(false)
  })
})
