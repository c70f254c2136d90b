/**
 * @sluice/simulation: run the real policies, unchanged, in virtual time against
 * model servers described as data. The SVG charts (vega) are the subpath
 * `@sluice/simulation/Charts`, so importing this entry never loads vega or its types.
 *
 * @since 0.1.0
 */

/** @since 1.0.0 */
export * as PriorityFleet from "./PriorityFleet.js"
/** @since 0.1.0 */
export * as Simulation from "./Simulation.js"
/** @since 0.1.0 */
export * as Strategy from "./Strategy.js"
/** @since 1.0.0 */
export * as Series from "./Series.js"
