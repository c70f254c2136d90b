import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { performance } from "node:perf_hooks"
import { flood, serveLayer } from "./flood.js"
const body = '{"error":{"_tag":"Overloaded","reason":"shed","retryAfterMs":1000}}'
const variants: Record<string, HttpServerResponse.HttpServerResponse> = {
  empty: HttpServerResponse.empty({ status: 503 }),
  emptyHeaders: HttpServerResponse.empty({ status: 503, headers: { "retry-after": "1" } }),
  text: HttpServerResponse.text(body, { status: 503, contentType: "application/json" }),
  textHeaders: HttpServerResponse.text(body, { status: 503, contentType: "application/json", headers: { "retry-after": "1" } }),
  json: HttpServerResponse.jsonUnsafe(JSON.parse(body), { status: 503, headers: { "retry-after": "1" } }),
}
const which = process.argv.slice(2)
Effect.runPromise(Effect.scoped(Effect.gen(function* () {
  for (const name of which) {
    const url = yield* serveLayer(HttpRouter.serve(HttpRouter.add("GET", "/", variants[name]!), { disableLogger: true, disableListenLog: true }))
    yield* flood(url, 64, 1500)
    const cpu = process.cpuUsage(); const t = performance.now()
    const [a, b] = yield* flood(url, 64, 5000)
    const u = process.cpuUsage(cpu); const n = a.non2xx + b.non2xx
    console.log(name, Math.round(n / ((performance.now() - t) / 1000)), "/s", ((u.user + u.system) / n).toFixed(2), "us/resp")
  }
}))).then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
