import { NodeHttpClient } from "@effect/platform-node"
import { CongestionWindow } from "@sluice/adaptive"
import { SluiceHttpClient } from "@sluice/http"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

// A backend that is busy one time in three: it answers 503, as an overloaded server does.
let arrivals = 0
const server = createServer((_request, response) => {
  arrivals++
  response.writeHead(arrivals % 3 === 1 ? 503 : 200).end()
})
await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/items`

// Up to 3 attempts, retries within 10% of requests (plus a floor of 1 per second), an
// adaptive throttle (K = 2), and a concurrency limit found by a congestion window.
const ClientLive = SluiceHttpClient.layerDefault({
  maxAttempts: 3,
  timeout: "5 seconds",
  budget: { ratio: 0.1, minRetriesPerSecond: 1 },
  throttle: { k: 2 },
  limiter: { algorithm: CongestionWindow.factory({ backoffRatio: 0.9 }) }
}).pipe(Layer.provide(NodeHttpClient.layerUndici))

const program = Effect.gen(function* () {
  const client = yield* SluiceHttpClient.SluiceHttpClient
  let ok = 0
  for (let i = 0; i < 10; i++) if ((yield* client.get(url)).status === 200) ok++
  return ok
})

const ok = await Effect.runPromise(program.pipe(Effect.provide(ClientLive)))
console.log(
  `${ok} of 10 calls succeeded; the server answered ${arrivals} requests, ${arrivals - ok} of them 503`
) // prints: 10 of 10 calls succeeded; the server answered 15 requests, 5 of them 503
server.close()
