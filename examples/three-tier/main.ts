/**
 * `npm run example:three-tier`: frontend → middle → backend on loopback, wired
 * with @sluice/http. Prints one JSON object with the counts of three scenarios:
 *
 * - `overload`: the backend is down; only the middle tier retries it (≤ 3
 *   backend hits per user request), and the user gets a don't-retry.
 *   `overloadNaive` runs the same stack with every layer retrying plain 503s:
 *   3 × 3 × 3 = 27 backend hits per user request.
 * - `propagation`: the criticality the frontend sets reaches the backend.
 * - `shedding`: under overload the backend sheds SHEDDABLE work first while
 *   CRITICAL work keeps succeeding.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Effect } from "effect"
import { overload, propagation, shedding } from "./scenarios.js"
import { makeStack } from "./stack.js"

const program = Effect.gen(function* () {
  // A fresh stack per scenario: the clients' congestion windows remember the overload.
  const fresh = makeStack({ capacity: 20, serviceTime: "20 millis" })
  const overloadCounts = yield* Effect.scoped(Effect.flatMap(fresh, (stack) => overload(stack, 5)))
  // the same stack retrying naively at every layer, for comparison
  const naiveOverloadCounts = yield* Effect.scoped(
    Effect.flatMap(makeStack({ capacity: 20, serviceTime: "20 millis", naive: true }), (stack) =>
      overload(stack, 2, { naive: true })
    )
  )
  const propagationCounts = yield* Effect.scoped(Effect.flatMap(fresh, propagation))
  const sheddingCounts = yield* Effect.scoped(
    Effect.flatMap(fresh, (stack) => shedding(stack, { requests: 5 }))
  )
  return {
    overload: overloadCounts,
    overloadNaive: naiveOverloadCounts,
    propagation: propagationCounts,
    shedding: sheddingCounts
  }
}).pipe(Effect.provide(NodeHttpClient.layerUndici))

Effect.runPromise(program).then(
  (result) => {
    console.log(JSON.stringify(result, null, 2))
    process.exit(0)
  },
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
