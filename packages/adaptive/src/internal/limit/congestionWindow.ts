import * as Kernel from "@sluice/kernel/limit/CongestionWindow"
import type * as CW from "../../limit/CongestionWindow.js"
import { algorithm } from "./limitAlgorithm.js"
import { validator } from "../options.js"

/** @internal */
export const { makeUnsafe, make, factory } = algorithm<
  CW.CongestionWindowOptions,
  CW.CongestionWindowConfig,
  CW.CongestionWindow
>(validator("CongestionWindow", Kernel.configure), (config) => new Kernel.CongestionWindow(config))
