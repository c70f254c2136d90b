import * as Kernel from "@sluice/kernel/limit/VegasLimit"
import type * as V from "../../limit/VegasLimit.js"
import { algorithm } from "./limitAlgorithm.js"
import { validator } from "../options.js"

/** @internal */
export const { makeUnsafe, make, factory } = algorithm<V.VegasLimitOptions, V.VegasLimitConfig, V.VegasLimit>(
  validator("VegasLimit", Kernel.configure),
  (config) => new Kernel.VegasLimit(config)
)
