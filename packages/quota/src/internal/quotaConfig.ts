import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { InvalidOptions } from "@sluice/core/Options"
import { PlanTable } from "@sluice/kernel/quota/QuotaConfig"
import type * as QC from "../QuotaConfig.js"
import type { CompiledPlan } from "../QuotaConfig.js"
import type { PlanInput, Plan } from "./quotaPlan.js"
import { Plan as PlanSchema, compile } from "./quotaPlan.js"
import type { QuotaConfigOptions } from "../QuotaConfig.js"

// every issue of the plan, not only the first: a plan is written by hand, fixed in one go
const decodePlanResult = Schema.decodeUnknownResult(PlanSchema, { errors: "all" })

/** Decodes one plan; the message names the client (or "default") and the field. @internal */
export const decodePlan = (input: unknown, label: string): Effect.Effect<CompiledPlan, InvalidOptions> =>
  Result.match(decodePlanResult(input), {
    onFailure: (error) =>
      Effect.fail(
        new InvalidOptions({
          module: "QuotaConfig",
          message: `QuotaConfig: invalid plan for ${label}\n${error.message}`
        })
      ),
    onSuccess: (plan) => Effect.succeed(compile(plan))
  })

/** How a plan's messages name a client. @internal */
export const clientLabel = (client: string): string => `client ${JSON.stringify(client)}`

/** Writes to where the plans are stored, made before they take effect here. @internal */
export interface PlanHooks<E> {
  readonly onSetDefault: (plan: CompiledPlan) => Effect.Effect<void, E>
  readonly onSet: (client: string, plan: CompiledPlan) => Effect.Effect<void, E>
  readonly onRemove: (client: string) => Effect.Effect<void, E>
}

/** @internal */
export const makeTable = (
  options: QuotaConfigOptions
): Effect.Effect<PlanTable<CompiledPlan>, InvalidOptions> =>
  Effect.gen(function* () {
    const table = new PlanTable(yield* decodePlan(options.default, "default"))
    for (const [client, plan] of Object.entries(options.clients ?? {})) {
      table.overrides.set(client, yield* decodePlan(plan, clientLabel(client)))
    }
    return table
  })

/**
 * The service on a table of plans. A write is decoded first (an invalid plan fails and the
 * previous one stays), then goes through `hooks` (a remote source persists it), then takes
 * effect here.
 *
 * @internal
 */
export const serviceFromTable = <E = never>(
  table: PlanTable<CompiledPlan>,
  hooks?: PlanHooks<E>
): QC.Service<E> => {
  /** a client's plan, or (no client) the default */
  const write = (
    client: string | undefined,
    input: PlanInput | Plan
  ): Effect.Effect<void, InvalidOptions | E> =>
    Effect.flatMap(decodePlan(input, client === undefined ? "default" : clientLabel(client)), (plan) =>
      Effect.andThen(
        (client === undefined ? hooks?.onSetDefault(plan) : hooks?.onSet(client, plan)) ?? Effect.void,
        Effect.sync(() => table.set(plan, client))
      )
    )
  return {
    planFor: (client) => table.planFor(client),
    plan: (client) => Effect.sync(() => table.planFor(client).plan),
    defaultPlan: Effect.sync(() => table.defaultPlan.plan),
    overrides: Effect.sync(() => new Map(Array.from(table.overrides, ([k, v]) => [k, v.plan] as const))),
    setDefault: (input) => write(undefined, input),
    setPlan: write,
    removePlan: (client) =>
      Effect.andThen(
        hooks?.onRemove(client) ?? Effect.void,
        Effect.sync(() => table.remove(client))
      )
  }
}

/** @internal */
export const make = (options: QuotaConfigOptions): Effect.Effect<QC.Service<never>, InvalidOptions> =>
  Effect.map(makeTable(options), (table) => serviceFromTable(table))
