/**
 * The `Random` a run's `seed` provides: PCG32 (XSH-RR) seeded the way the Effect 3 line's
 * `Random.make(seed)` was, so a seed draws the same numbers on both lines and a run (its
 * jitter, its sampling) keeps the figures recorded for it. `Random.withSeed` would do
 * for reproducibility alone, but it is another generator (ISAAC): every recorded run
 * that draws would change.
 */
import type * as Random from "effect/Random"

const MASK_64 = (1n << 64n) - 1n
const MULTIPLIER = 0x5851f42d4c957f2dn
/** The stream (odd increment) of the Effect 3 generator. */
const INCREMENT = 0x14057b7ef767814fn
const BIT_27 = 134217728
const BIT_53 = 9007199254740992

/** Effect 3's `Hash.optimize`: clears bit 30 unless bit 31 carries it. */
const optimize = (n: number): number => (n & 0xbfffffff) | ((n >>> 1) & 0x40000000)

/** Effect 3's `Hash.number`: what `Random.make(n)` seeded its generator with. */
const hashNumber = (n: number): number => {
  if (n !== n || n === Infinity) return 0
  let h = n | 0
  if (h !== n) h ^= n * 0xffffffff
  while (n > 0xffffffff) h ^= n /= 0xffffffff
  return optimize(h)
}

/** Effect 3's `Hash.string`. */
const hashString = (text: string): number => {
  let h = 5381
  for (let i = text.length; i > 0;) h = (h * 33) ^ text.charCodeAt(--i)
  return optimize(h)
}

/** @internal */
export const seededRandom = (seed: number | string): Random.Random => {
  let state = 0n
  /** One PCG32 step: advance the LCG, output the permuted old state. */
  const next32 = (): number => {
    const old = state
    state = (old * MULTIPLIER + INCREMENT) & MASK_64
    const xorshifted = Number((((old >> 18n) ^ old) >> 27n) & 0xffffffffn)
    const rotation = Number(old >> 59n)
    return ((xorshifted >>> rotation) | (xorshifted << (-rotation & 31))) >>> 0
  }
  next32()
  state = (state + BigInt((typeof seed === "number" ? hashNumber(seed) : hashString(seed)) >>> 0)) & MASK_64
  next32()
  /** A double in [0, 1) from 53 random bits, as the Effect 3 generator drew it. */
  const nextDouble = (): number => {
    const hi = next32() & 0x03ffffff
    const lo = next32() & 0x07ffffff
    return (hi * BIT_27 + lo) / BIT_53
  }
  return {
    nextDoubleUnsafe: nextDouble,
    nextIntUnsafe: () => Math.round(nextDouble() * Number.MAX_SAFE_INTEGER) % Number.MAX_SAFE_INTEGER
  }
}
