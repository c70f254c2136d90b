import * as Kernel from "@sluice/kernel/limit/Vegas"
import type * as V from "../Vegas.js"
import { algorithm } from "./limitAlgorithm.js"
import { validator } from "./options.js"

/** @internal */
export const { unsafeMake, make, factory } = algorithm<V.VegasOptions, V.VegasConfig, V.Vegas>(
  validator("Vegas", Kernel.configure),
  (config) => new Kernel.Vegas(config)
)
