import * as Kernel from "@sluice/kernel/limit/Aimd"
import * as Duration from "effect/Duration"
import type * as A from "../Aimd.js"
import { algorithm } from "./limitAlgorithm.js"
import { validator } from "./options.js"

/** @internal */
export const { unsafeMake, make, factory } = algorithm<A.AimdOptions, A.AimdConfig, A.Aimd>(
  validator("Aimd", Kernel.configure, ["timeout"]),
  (config) =>
    new Kernel.Aimd({
      ...config,
      timeout: config.timeout === undefined ? Infinity : Duration.toMillis(config.timeout)
    })
)
