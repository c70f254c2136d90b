/**
 * The open-loop load generator of `bench/overload.ts`, run in its own process (forked
 * with an IPC channel), so that it does not share an event loop with the server.
 *
 * For each phase the parent sends, it issues GET requests at a fixed rate whatever the
 * server answers (open loop: a slow server does not slow the offered load down), each
 * with its own `x-sluice-criticality` header (deterministic, evenly spread shares:
 * CRITICAL, none at all — the server's default level — and SHEDDABLE for the rest),
 * through one undici `Pool` of keep-alive connections (bounded in number, one request
 * per connection at a time; a request waits in the generator for a free connection,
 * and one still waiting at its deadline is never sent;
 * undici because Node's `http` client costs too much CPU per request to offer a few
 * thousand requests per second from a shared core). Every request has a client deadline:
 * without a complete response by then it counts as a timeout (one on the wire is left to
 * finish, up to three deadlines, so that timeouts do not turn into a storm of new
 * connections). A phase is bounded in time and in request count; the generator answers
 * with counts per criticality and the latencies it saw. With `customers`, each request also
 * carries one customer's `x-api-key` (evenly spread shares, smooth weighted round robin), and
 * the answer has counts per customer.
 *
 * Not a benchmark of its own: `npm run bench:overload` starts it.
 */
import { performance } from "node:perf_hooks"
import { Pool, type Dispatcher } from "undici"

/** What the parent asks for. */
export interface PhaseRequest {
  readonly type: "run"
  readonly id: number
  readonly url: string
  readonly rps: number
  readonly durationMs: number
  readonly maxRequests: number
  /** share of requests sent with `x-sluice-criticality: CRITICAL` */
  readonly criticalShare: number
  /** share sent without a criticality header (the server's default level); the rest are SHEDDABLE */
  readonly defaultShare?: number | undefined
  readonly deadlineMs: number
  readonly sockets: number
  /** customers (`x-api-key`) and their shares of the requests, adding up to 1 */
  readonly customers?: ReadonlyArray<{ readonly key: string; readonly share: number }> | undefined
}

/** Counts for one customer. */
export interface CustomerStats {
  sent: number
  /** 2xx responses received within the deadline */
  ok: number
  /** `429` responses (over quota) */
  denied: number
  /** other non-2xx responses (`503`) */
  refused: number
}

/** Counts for one criticality level. */
export interface LevelStats {
  sent: number
  /** 2xx responses received within the deadline */
  ok: number
}

/** What the generator answers. */
export interface PhaseResult {
  readonly type: "result"
  readonly id: number
  /** how long requests were being issued */
  readonly sendMs: number
  readonly sent: number
  /** 2xx within the deadline */
  readonly ok: number
  /** responses with a non-2xx status (503 from the shedder or limiter) */
  readonly rejected: number
  /** no complete response within the deadline (aborted) */
  readonly timeouts: number
  /** connection errors before the deadline */
  readonly errors: number
  /** of the timeouts: never sent, because every connection was busy until the deadline */
  readonly unsent: number
  readonly statuses: Record<string, number>
  readonly levels: Record<Level, LevelStats>
  readonly customers: Record<string, CustomerStats>
  /** latency (ms) of each 2xx response */
  readonly okLatencies: ReadonlyArray<number>
  /** latency (ms) of every request, a timeout counted as the deadline */
  readonly allLatencies: ReadonlyArray<number>
  /** the largest gap (ms) between the generator's timer ticks: how late the generator itself ran */
  readonly maxTickLagMs: number
  /** CPU time (ms) the generator process used during the phase */
  readonly cpuMs: number
  /** connections the pool opened during the phase */
  readonly connects: number
}

const TICK_MS = 2

/** `DEFAULT`: no criticality header, so the server's default level applies. */
export type Level = "CRITICAL" | "DEFAULT" | "SHEDDABLE"
const HEADERS: Record<Level, Record<string, string>> = {
  CRITICAL: { "x-sluice-criticality": "CRITICAL" },
  DEFAULT: {},
  SHEDDABLE: { "x-sluice-criticality": "SHEDDABLE" }
}

/** One request in flight: also its undici dispatch handler (one object per request). */
class Call implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | undefined = undefined
  status = 0
  /** counted (answered, failed, or past its deadline) */
  done = false
  /** finished on the wire (answered, failed or aborted) */
  ended = false
  constructor(
    readonly phase: PhaseRun,
    readonly level: Level,
    readonly start: number,
    readonly customer: number
  ) {}
  onRequestStart(controller: Dispatcher.DispatchController) {
    this.controller = controller
  }
  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number) {
    this.status = statusCode
  }
  onResponseData() {}
  onResponseEnd() {
    this.phase.settle(this, this.status >= 200 && this.status < 300 ? "ok" : "rejected")
    this.phase.end(this)
  }
  onResponseError() {
    this.phase.settle(this, "error")
    this.phase.end(this)
  }
}

class PhaseRun {
  readonly levels: PhaseResult["levels"] = {
    CRITICAL: { sent: 0, ok: 0 },
    DEFAULT: { sent: 0, ok: 0 },
    SHEDDABLE: { sent: 0, ok: 0 }
  }
  readonly statuses: Record<string, number> = {}
  readonly customers: Record<string, CustomerStats> = {}
  private readonly customerKeys: ReadonlyArray<string>
  private readonly customerShares: ReadonlyArray<number>
  private readonly customerCredits: Array<number>
  /** the headers of each level (and customer, when there are customers) */
  private readonly headers: Record<Level, ReadonlyArray<Record<string, string>>>
  readonly okLatencies: Array<number> = []
  readonly allLatencies: Array<number> = []
  /** every call in start order, for the deadline sweep */
  readonly calls: Array<Call> = []
  private swept = 0
  private hardSwept = 0
  /** dispatched and not ended */
  open = 0
  sent = 0
  ok = 0
  rejected = 0
  timeouts = 0
  errors = 0
  unsent = 0
  outstanding = 0
  sending = true
  sendMs = 0
  maxTickLagMs = 0
  connects = 0
  private readonly cpu = process.cpuUsage()
  private criticalCredit = 0
  private defaultCredit = 0
  /** generated, waiting for a free connection (ours, not the pool's: see `fire`) */
  private readonly waiting: Array<Call> = []
  private waitingHead = 0
  private readonly path: string
  constructor(
    readonly request: PhaseRequest,
    private readonly pool: Pool,
    private readonly resolve: (result: PhaseResult) => void
  ) {
    this.path = new URL(request.url).pathname
    const customers = request.customers ?? []
    this.customerKeys = customers.map((c) => c.key)
    this.customerShares = customers.map((c) => c.share)
    this.customerCredits = customers.map(() => 0)
    for (const key of this.customerKeys) this.customers[key] = { sent: 0, ok: 0, denied: 0, refused: 0 }
    const withKeys = (headers: Record<string, string>) =>
      customers.length === 0 ? [headers] : customers.map((c) => ({ ...headers, "x-api-key": c.key }))
    this.headers = {
      CRITICAL: withKeys(HEADERS.CRITICAL),
      DEFAULT: withKeys(HEADERS.DEFAULT),
      SHEDDABLE: withKeys(HEADERS.SHEDDABLE)
    }
  }

  /** Smooth weighted round robin: every customer gains its share, the richest sends. -1: none. */
  private nextCustomer(): number {
    const credits = this.customerCredits
    if (credits.length === 0) return -1
    let best = 0
    for (let i = 0; i < credits.length; i++) {
      credits[i]! += this.customerShares[i]!
      if (credits[i]! > credits[best]!) best = i
    }
    credits[best]! -= 1
    return best
  }

  fire(now: number) {
    // Exact, evenly spread shares: each level's credit grows by its share per request,
    // and a level whose credit reaches 1 sends this one (CRITICAL first).
    this.criticalCredit += this.request.criticalShare
    this.defaultCredit += this.request.defaultShare ?? 0
    let level: Level = "SHEDDABLE"
    if (this.criticalCredit >= 1 - 1e-9) {
      level = "CRITICAL"
      this.criticalCredit -= 1
    } else if (this.defaultCredit >= 1 - 1e-9) {
      level = "DEFAULT"
      this.defaultCredit -= 1
    }
    this.sent++
    this.outstanding++
    this.levels[level].sent++
    const customer = this.nextCustomer()
    if (customer >= 0) this.customers[this.customerKeys[customer]!]!.sent++
    const call = new Call(this, level, now, customer)
    this.calls.push(call)
    // One request per connection at a time, at most `sockets` connections: a request
    // waits here (not in the pool) for a free one, so that one whose deadline passes
    // while waiting is simply never sent; aborting it in the pool would close a
    // connection and make the next request pay for a new one.
    if (this.open < this.request.sockets) this.dispatch(call)
    else this.waiting.push(call)
  }

  private dispatch(call: Call) {
    this.open++
    const headers = this.headers[call.level][Math.max(0, call.customer)]!
    this.pool.dispatch({ path: this.path, method: "GET", headers }, call)
  }

  /** Sends waiting calls while connections are free; expired ones are dropped unsent. */
  private drain() {
    while (this.open < this.request.sockets && this.waitingHead < this.waiting.length) {
      const call = this.waiting[this.waitingHead++]!
      if (call.done) continue
      this.dispatch(call)
    }
    if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waiting.length) {
      this.waiting.splice(0, this.waitingHead)
      this.waitingHead = 0
    }
  }

  /**
   * Calls past their deadline are timeouts (one timer for all of them). One still queued
   * in the pool is never sent; one already on a connection is left to finish, so that a
   * slow server does not also pay for a storm of new connections, up to a hard limit
   * of 3 deadlines, where it is aborted.
   */
  sweep(now: number) {
    const deadline = this.request.deadlineMs
    while (this.swept < this.calls.length && now - this.calls[this.swept]!.start >= deadline) {
      const call = this.calls[this.swept++]!
      if (!call.done) {
        if (call.controller === undefined) this.unsent++
        this.settle(call, "timeout")
      }
    }
    while (this.hardSwept < this.calls.length && now - this.calls[this.hardSwept]!.start >= 3 * deadline) {
      const call = this.calls[this.hardSwept++]!
      if (!call.ended) call.controller?.abort(new Error("hard deadline"))
    }
  }

  end(call: Call) {
    if (call.ended) return
    call.ended = true
    this.open--
    this.drain()
    this.finish()
  }

  settle(call: Call, outcome: "ok" | "rejected" | "timeout" | "error") {
    if (call.done) return
    call.done = true
    this.outstanding--
    const latency = performance.now() - call.start
    if (call.status !== 0) this.statuses[call.status] = (this.statuses[call.status] ?? 0) + 1
    const customer = call.customer >= 0 ? this.customers[this.customerKeys[call.customer]!] : undefined
    switch (outcome) {
      case "ok":
        // A response that arrives after the deadline (the sweep runs every few ms) is a timeout too.
        if (latency > this.request.deadlineMs) {
          this.timeouts++
          this.allLatencies.push(latency)
          break
        }
        this.ok++
        this.levels[call.level].ok++
        if (customer !== undefined) customer.ok++
        this.okLatencies.push(latency)
        this.allLatencies.push(latency)
        break
      case "rejected":
        this.rejected++
        if (customer !== undefined) {
          if (call.status === 429) customer.denied++
          else customer.refused++
        }
        this.allLatencies.push(latency)
        break
      case "timeout":
        this.timeouts++
        this.allLatencies.push(this.request.deadlineMs)
        break
      case "error":
        this.errors++
        this.allLatencies.push(latency)
        break
    }
    this.finish()
  }

  finish() {
    if (this.sending || this.outstanding > 0 || this.open > 0) return
    this.waiting.length = 0
    this.resolve({
      type: "result",
      id: this.request.id,
      sendMs: this.sendMs,
      sent: this.sent,
      ok: this.ok,
      rejected: this.rejected,
      timeouts: this.timeouts,
      errors: this.errors,
      unsent: this.unsent,
      statuses: this.statuses,
      levels: this.levels,
      customers: this.customers,
      okLatencies: this.okLatencies,
      allLatencies: this.allLatencies,
      maxTickLagMs: this.maxTickLagMs,
      cpuMs: (() => {
        const used = process.cpuUsage(this.cpu)
        return (used.user + used.system) / 1000
      })(),
      connects: this.connects
    })
  }
}

const runPhase = (request: PhaseRequest, pool: Pool): Promise<PhaseResult> =>
  new Promise((resolve) => {
    const run = new PhaseRun(request, pool, resolve)
    const onConnect = () => run.connects++
    pool.on("connect", onConnect)
    const began = performance.now()
    let lastTick = began
    const timer = setInterval(() => {
      const now = performance.now()
      run.maxTickLagMs = Math.max(run.maxTickLagMs, now - lastTick - TICK_MS)
      lastTick = now
      const elapsed = now - began
      if (run.sending) {
        const due = Math.min(
          request.maxRequests,
          Math.floor((Math.min(elapsed, request.durationMs) * request.rps) / 1000)
        )
        while (run.sent < due) run.fire(now)
        if (elapsed >= request.durationMs || run.sent >= request.maxRequests) {
          run.sendMs = Math.min(elapsed, request.durationMs)
          run.sending = false
        }
      }
      run.sweep(now)
      if (!run.sending && run.outstanding === 0 && run.open === 0) {
        clearInterval(timer)
        pool.off("connect", onConnect)
      }
      run.finish()
    }, TICK_MS)
  })

if (process.send !== undefined) {
  process.setSourceMapsEnabled(false)
  // one pool per server (the tenants phase runs a server of its own)
  const pools = new Map<string, Pool>()
  // Never outlive the parent, and never run for more than a few minutes whatever happens.
  process.on("disconnect", () => process.exit(0))
  setTimeout(() => process.exit(2), 5 * 60_000).unref()
  process.on("message", (message: PhaseRequest | { readonly type: "exit" }) => {
    if (message.type === "exit") {
      process.exit(0)
    }
    if (message.type === "run") {
      // keep-alive connections, at most `sockets` of them; one request per connection at a time
      const origin = new URL(message.url).origin
      let pool = pools.get(origin)
      if (pool === undefined) {
        pool = new Pool(origin, { connections: message.sockets, pipelining: 1 })
        pools.set(origin, pool)
      }
      void runPhase(message, pool).then((result) => process.send!(result))
    }
  })
  process.send({ type: "ready" })
}
