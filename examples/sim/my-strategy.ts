/**
 * A user's own strategy, compared with the built-ins:
 *
 *   npm run sim -- --scenario overload-2000 --strategy ./examples/sim/my-strategy.ts
 *
 * Any module that exports a `Strategy` (built from the public APIs) works.
 */
import { CongestionWindow } from "@sluice/adaptive"
import { Strategy } from "@sluice/simulation"

const renoHalf: Strategy.Strategy = {
  name: "reno-0.5",
  description: "congestion window (Reno, factor 0.5), paced, immediate retries",
  make: Strategy.limited(() => CongestionWindow.factory({ variant: "reno", backoffRatio: 0.5 }), {})
}

export default renoHalf
