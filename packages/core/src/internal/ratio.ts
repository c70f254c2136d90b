import type * as R from "../Ratio.js"

const LIMIT = 2 ** 53

// The ratio as the decimal its shortest round-trip form spells ("0.55" → 55/100,
// "1e-7" → 1/10^7): the number the user wrote, not the binary double nearest to it.
const decimal = (ratio: number): { readonly p: bigint; readonly q: bigint } => {
  const text = String(ratio)
  const [mantissa, exponentText] = text.split("e")
  const exponent = exponentText === undefined ? 0 : Number(exponentText)
  const [whole, fraction = ""] = mantissa!.split(".")
  let p = BigInt(whole! + fraction)
  let k = fraction.length - exponent
  if (k < 0) {
    p *= 10n ** BigInt(-k)
    k = 0
  }
  return { p, q: 10n ** BigInt(k) }
}

class ExactRatio implements R.ExactRatio {
  readonly p: bigint
  readonly q: bigint
  private readonly pn: number
  private readonly qn: number
  constructor(readonly value: number) {
    const { p, q } = decimal(value)
    this.p = p
    this.q = q
    // Exact in doubles only while every factor and product stays below 2^53.
    this.pn = p < BigInt(LIMIT) ? Number(p) : NaN
    this.qn = q < BigInt(LIMIT) ? Number(q) : NaN
  }
  // sign of part / whole − p / q, exactly
  compare(part: number, whole: number): -1 | 0 | 1 {
    const left = part * this.qn
    const right = this.pn * whole
    if (left < LIMIT && right < LIMIT) return left < right ? -1 : left > right ? 1 : 0
    const l = BigInt(part) * this.q
    const r = this.p * BigInt(whole)
    return l < r ? -1 : l > r ? 1 : 0
  }
  atLeast(part: number, whole: number): boolean {
    return this.compare(part, whole) >= 0
  }
  above(part: number, whole: number): boolean {
    return this.compare(part, whole) > 0
  }
  floorTimes(whole: number): number {
    if (!Number.isSafeInteger(whole) || whole < 0) {
      throw new RangeError(`expected a non-negative integer, got ${whole}`)
    }
    const product = this.pn * whole
    // `%` of integers below 2^53 is exact, and so is the division of the exact multiple left.
    if (product < LIMIT && this.qn < LIMIT) return (product - (product % this.qn)) / this.qn
    return Number((this.p * BigInt(whole)) / this.q)
  }
}

/** @internal */
export const sumAtMost = (ratios: ReadonlyArray<number>, bound: number): boolean => {
  const parts = [...ratios, bound].map((ratio) => {
    if (!Number.isFinite(ratio) || ratio < 0)
      throw new RangeError(`expected a finite, non-negative ratio, got ${ratio}`)
    return decimal(ratio)
  })
  // Every denominator is a power of ten: the largest is a common one.
  const q = parts.reduce((max, part) => (part.q > max ? part.q : max), 1n)
  const scaled = parts.map((part) => part.p * (q / part.q))
  const limit = scaled.pop()!
  return scaled.reduce((sum, p) => sum + p, 0n) <= limit
}

/** @internal */
export const make = (ratio: number): R.ExactRatio => {
  if (!Number.isFinite(ratio) || ratio < 0)
    throw new RangeError(`expected a finite, non-negative ratio, got ${ratio}`)
  return new ExactRatio(ratio)
}
