/**
 * Runs one strategy on one scenario in virtual time.
 *
 *   npm run sim -- --scenario overload-2000 --strategy cwnd-reno [--seed 1] [--json]
 *   npm run sim -- --scenario ./my-server.json --strategy ./my-strategy.ts
 *
 * `--scenario` is a built-in name or a JSON file (a `Simulation.Scenario`); `--strategy`
 * a built-in name or a module that exports a `Strategy` (`./file.ts#name` picks one).
 * With `--json` it prints exactly one JSON object (see `SimJson`).
 */
import { Effect } from "effect"
import { parseArgs } from "node:util"
import { runOne } from "./run.js"
import { resolveScenario, scenarioNames } from "./scenarios.js"
import { resolveStrategy, strategyNames } from "./strategies.js"

const usage = () =>
  [
    "usage: npm run sim -- --scenario <name|file.json> --strategy <name|module.ts[#name]> [--seed N] [--json]",
    `  scenarios:  ${scenarioNames().join(", ")}, or a JSON file (see examples/sim/my-server.json)`,
    `  strategies: ${strategyNames().join(", ")}, or a module exporting a Strategy`
  ].join("\n")

const fail = (message: string): never => {
  process.stderr.write(`${message}\n${usage()}\n`)
  process.exit(2)
}

const main = async () => {
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
  const strategy =
    scenario.builtInStrategy ??
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
