/**
 * Runs one strategy on one scenario in virtual time.
 *
 *   npm run sim -- --scenario overload-2000 --strategy cwnd-reno [--seed 1] [--json]
 *   npm run sim -- --scenario ./my-server.json --strategy ./my-strategy.ts
 *
 * `--scenario` is a built-in name or a JSON file (a `Simulation.Scenario`); `--strategy`
 * a built-in name or a module that exports a `Strategy` (`./file.ts#name` picks one).
 * With `--json` it prints exactly one JSON object (see `SimJson`). The scenarios that build
 * their own client (autosave, workers, throttle) refuse another `--strategy`; `--help` prints
 * the usage and exits 0, whatever else is given.
 */
import { Effect } from "effect"
import { parseArgs } from "node:util"
import { runOne } from "./run.js"
import { resolveScenario, scenarioNames } from "./scenarios.js"
import { resolveStrategy, strategyNames } from "./strategies.js"

const usage = () =>
  [
    "usage: npm run sim -- --scenario <name|file.json> --strategy <name|module.ts[#name]> [--seed N] [--json]",
    "  (autosave, workers and throttle bring their own client: they take no other --strategy)",
    `  scenarios:  ${scenarioNames().join(", ")}, or a JSON file (see examples/sim/my-server.json)`,
    `  strategies: ${strategyNames().join(", ")}, or a module exporting a Strategy`
  ].join("\n")

const fail = (message: string): never => {
  process.stderr.write(`${message}\n${usage()}\n`)
  process.exit(2)
}

const main = async () => {
  // Asked for help, the user gets it whatever else the line holds (a missing value, an unknown
  // option), and it is not an error.
  const args = process.argv.slice(2)
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`${usage()}\n`)
    return
  }
  let values: { scenario?: string; strategy?: string; seed?: string; json?: boolean; help?: boolean }
  try {
    ;({ values } = parseArgs({
      options: {
        scenario: { type: "string" },
        strategy: { type: "string" },
        seed: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" }
      }
    }))
  } catch (error) {
    return fail(String((error as Error).message))
  }
  if (values.help) {
    process.stdout.write(`${usage()}\n`)
    return
  }
  const scenario =
    (await Effect.runPromise(
      Effect.catch(resolveScenario(values.scenario ?? ""), (error) => Effect.sync(() => fail(error.message)))
    )) ?? fail(`unknown or missing --scenario "${values.scenario ?? ""}"`)
  // A scenario that brings its own client cannot run another: say so rather than run its own.
  const builtIn = scenario.builtInStrategy
  if (builtIn !== undefined && values.strategy !== undefined && values.strategy !== builtIn.name)
    fail(
      `the ${scenario.name} scenario runs its own strategy (${builtIn.name}) and takes no --strategy, got "${values.strategy}"`
    )
  const strategy =
    builtIn ??
    (await Effect.runPromise(
      Effect.catch(resolveStrategy(values.strategy ?? ""), (error) => Effect.sync(() => fail(error.message)))
    )) ??
    fail(`unknown or missing --strategy "${values.strategy ?? ""}"`)
  const seed = values.seed === undefined ? 1 : Number(values.seed)
  if (!Number.isSafeInteger(seed)) fail(`--seed must be an integer, got "${values.seed}"`)

  const run = await Effect.runPromise(runOne(scenario, strategy, { seed }))
  if (values.json) {
    process.stdout.write(`${JSON.stringify(run.json)}\n`)
    return
  }
  const j = run.json
  const lines = [
    `${scenario.name} with ${strategy.name} (seed ${seed})`,
    `  ${scenario.description}`,
    `  strategy: ${strategy.description}`,
    `  operations        ${j.succeeded} / ${j.operations} succeeded`,
    `  attempts          ${j.attempts} (${j.failedAttempts} failed, efficiency ${((100 * (j.attempts - j.failedAttempts)) / Math.max(1, j.attempts)).toFixed(1)}%)`,
    `  completion        ${j.completionSeconds.toFixed(2)} s virtual (optimal ${j.optimalSeconds.toFixed(2)} s, ratio ${(j.completionSeconds / j.optimalSeconds).toFixed(2)})`,
    ...(j.fairness !== undefined ? [`  fairness (Jain)   ${j.fairness.toFixed(3)}`] : []),
    ...(j.settleSeconds !== undefined ? [`  settle            ${j.settleSeconds} s`] : []),
    ...(j.overshootPct !== undefined ? [`  overshoot         ${j.overshootPct}%`] : []),
    ...(j.steadyErrorPct !== undefined ? [`  steady error      ${j.steadyErrorPct}%`] : []),
    `  wall time         ${j.wallMs.toFixed(0)} ms`
  ]
  process.stdout.write(`${lines.join("\n")}\n`)
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
