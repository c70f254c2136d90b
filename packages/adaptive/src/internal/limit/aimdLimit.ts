import * as Kernel from "@sluice/kernel/limit/AimdLimit"
import * as Duration from "effect/Duration"
import type * as A from "../../limit/AimdLimit.js"
import { algorithm } from "./limitAlgorithm.js"
import { validator } from "../options.js"

/** @internal */
export const { makeUnsafe, make, factory } = algorithm<A.AimdLimitOptions, A.AimdLimitConfig, A.AimdLimit>(
  validator("AimdLimit", Kernel.configure, ["timeout"]),
  (config) =>
    new Kernel.AimdLimit({
      ...config,
      timeout: config.timeout === undefined ? Infinity : Duration.toMillis(config.timeout)
    })
)
