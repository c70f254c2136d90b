import * as Kernel from "@sluice/kernel/limit/TempoLimit"
import type * as T from "../../limit/TempoLimit.js"
import { algorithm } from "./limitAlgorithm.js"
import { validator } from "../options.js"

/** @internal TempoLimit's factory checks its options when it is made. */
export const { makeUnsafe, make, factory } = algorithm<T.TempoLimitOptions, T.TempoLimitConfig, T.TempoLimit>(
  validator("TempoLimit", Kernel.configure),
  (config) => new Kernel.TempoLimit(config),
  true
)
