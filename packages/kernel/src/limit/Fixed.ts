/**
 * A fixed limit that never changes: what Netflix concurrency-limits calls `FixedLimit`. Under
 * a limiter it is a plain semaphore that keeps the limiter's queue, partitions and metrics;
 * it is the baseline every adaptive limit is measured against.
 *
 * @since 0.2.0
 */
import * as Field from "../options/Field.js"
import type { Limit, Sample } from "./Limit.js"

/**
 * A limit of `limit` permits, whatever the samples say. It reads neither latency nor time.
 *
 * @since 0.2.0
 */
export class Fixed implements Limit {
  readonly name = "fixed"
  /** Its samples need no clock read. */
  readonly usesTime = false
  constructor(readonly limit: number) {}
  onSample(_sample: Sample): number {
    return this.limit
  }
}

/**
 * Validates a fixed limit: a positive integer.
 *
 * @since 0.2.0
 */
export const configure = (input: object): Field.Result<{ readonly limit: number }> =>
  Field.resolve({ limit: Field.required<number>(Field.positiveInt) }, input)
