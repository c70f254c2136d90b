import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { InvalidOptions } from "@sluice/core/Options"
import type { CompiledPlan, Plan, PlanInput, QuotaStoreError } from "./quotaPlan.js"
import { Plan as PlanSchema, compile } from "./quotaPlan.js"

const decodePlanEither = Schema.decodeUnknownEither(PlanSchema)

/** Decodes one plan; the message names the client (or "default") and the field. @internal */
export const decodePlan = (input: unknown, label: string): Either.Either<CompiledPlan, InvalidOptions> => {
  const result = decodePlanEither(input)
  if (Either.isLeft(result)) {
    return Either.left(
      new InvalidOptions({
        module: "QuotaConfig",
        message: `QuotaConfig: invalid plan for ${label}\n${ParseResult.TreeFormatter.formatErrorSync(result.left)}`
      })
    )
  }
  return Either.right(compile(result.right))
}

/** `E`: how a write fails to reach where the plans are stored (never, in this process). @internal */
export interface QuotaConfigService<E = QuotaStoreError> {
  readonly planFor: (client: string) => CompiledPlan
  readonly plan: (client: string) => Effect.Effect<Plan>
  readonly defaultPlan: Effect.Effect<Plan>
  readonly overrides: Effect.Effect<ReadonlyMap<string, Plan>>
  readonly setDefault: (plan: PlanInput | Plan) => Effect.Effect<void, InvalidOptions | E>
  readonly setPlan: (client: string, plan: PlanInput | Plan) => Effect.Effect<void, InvalidOptions | E>
  readonly removePlan: (client: string) => Effect.Effect<void, E>
}

/** @internal */
export interface QuotaConfigOptions {
  readonly default: PlanInput | Plan
  readonly clients?: Readonly<Record<string, PlanInput | Plan>> | undefined
}

/**
 * The plans held in this process. The Redis source drives the same state through
 * `replaceOverrides`; writes go through `hooks` first so a remote source can
 * persist them before they take effect here.
 *
 * @internal
 */
export class PlanTable {
  defaultCompiled: CompiledPlan
  readonly table = new Map<string, CompiledPlan>()
  constructor(defaultPlan: CompiledPlan) {
    this.defaultCompiled = defaultPlan
  }

  planFor(client: string): CompiledPlan {
    return this.table.get(client) ?? this.defaultCompiled
  }

  /** Applies a full snapshot of overrides: entries not in it are removed. */
  replaceOverrides(plans: ReadonlyMap<string, CompiledPlan>): void {
    for (const key of this.table.keys()) if (!plans.has(key)) this.table.delete(key)
    for (const [key, plan] of plans) this.table.set(key, plan)
  }
}

/** Writes to where the plans are stored, made before they take effect here. @internal */
export interface PlanHooks<E> {
  readonly onSetDefault: (plan: CompiledPlan) => Effect.Effect<void, E>
  readonly onSet: (client: string, plan: CompiledPlan) => Effect.Effect<void, E>
  readonly onRemove: (client: string) => Effect.Effect<void, E>
}

const inProcess: PlanHooks<never> = {
  onSetDefault: () => Effect.void,
  onSet: () => Effect.void,
  onRemove: () => Effect.void
}

const fromEither = <A>(either: Either.Either<A, InvalidOptions>): Effect.Effect<A, InvalidOptions> =>
  Either.isLeft(either) ? Effect.fail(either.left) : Effect.succeed(either.right)

/** @internal */
export const makeTable = (options: QuotaConfigOptions): Effect.Effect<PlanTable, InvalidOptions> =>
  Effect.gen(function* () {
    const table = new PlanTable(yield* fromEither(decodePlan(options.default, "default")))
    for (const [client, plan] of Object.entries(options.clients ?? {})) {
      table.table.set(client, yield* fromEither(decodePlan(plan, `client ${JSON.stringify(client)}`)))
    }
    return table
  })

/** @internal */
export const serviceFromTable = <E = never>(
  table: PlanTable,
  hooks: PlanHooks<E> = inProcess as PlanHooks<E>
): QuotaConfigService<E> => ({
  planFor: (client) => table.planFor(client),
  plan: (client) => Effect.sync(() => table.planFor(client).plan),
  defaultPlan: Effect.sync(() => table.defaultCompiled.plan),
  overrides: Effect.sync(() => new Map(Array.from(table.table, ([k, v]) => [k, v.plan] as const))),
  setDefault: (input) =>
    Effect.flatMap(fromEither(decodePlan(input, "default")), (plan) =>
      Effect.zipRight(
        hooks.onSetDefault(plan),
        Effect.sync(() => {
          table.defaultCompiled = plan
        })
      )
    ),
  setPlan: (client, input) =>
    Effect.flatMap(fromEither(decodePlan(input, `client ${JSON.stringify(client)}`)), (plan) =>
      Effect.zipRight(
        hooks.onSet(client, plan),
        Effect.sync(() => {
          table.table.set(client, plan)
        })
      )
    ),
  removePlan: (client) =>
    Effect.zipRight(
      hooks.onRemove(client),
      Effect.sync(() => {
        table.table.delete(client)
      })
    )
})

/** @internal */
export const make = (options: QuotaConfigOptions): Effect.Effect<QuotaConfigService<never>, InvalidOptions> =>
  Effect.map(makeTable(options), (table) => serviceFromTable(table))
