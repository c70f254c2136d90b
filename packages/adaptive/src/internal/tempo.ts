import * as Kernel from "@sluice/kernel/limit/Tempo"
import type * as T from "../Tempo.js"
import { algorithm } from "./limitAlgorithm.js"
import { validator } from "./options.js"

/** @internal Tempo's factory checks its options when it is made. */
export const { unsafeMake, make, factory } = algorithm<T.TempoOptions, T.TempoConfig, T.Tempo>(
  validator("Tempo", Kernel.configure),
  (config) => new Kernel.Tempo(config),
  true
)
