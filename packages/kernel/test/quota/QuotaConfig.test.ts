import * as PlanTable from "@sluice/kernel/quota/QuotaConfig"
import { describe, expect, it } from "vitest"

describe("the plans in force", () => {
  it("a client's override, else the default; set, remove", () => {
    const table = new PlanTable.PlanTable("default")
    expect(table.planFor("a")).toBe("default")
    table.set("gold", "a")
    table.set("new default")
    expect([table.planFor("a"), table.planFor("b")]).toEqual(["gold", "new default"])
    table.remove("a")
    expect(table.planFor("a")).toBe("new default")
    expect(table.configured).toBe("default")
  })

  it("a refresh applies the store whole; what does not decode leaves the plan in force", () => {
    const table = new PlanTable.PlanTable("configured")
    table.set("gold", "a")
    table.set("silver", "b")
    table.set("bronze", "c")
    table.refresh("stored default", [
      ["a", "platinum"],
      ["b", undefined], // did not decode: silver stays
      ["d", undefined] // did not decode and none before: the default
    ])
    expect(["a", "b", "c", "d"].map((c) => table.planFor(c))).toEqual([
      "platinum",
      "silver",
      "stored default",
      "stored default"
    ])
    expect([...table.overrides.keys()].sort()).toEqual(["a", "b"])
    // a stored default that does not decode keeps the one in force; none stored: the configured one
    table.refresh(undefined, [])
    expect(table.defaultPlan).toBe("stored default")
    table.refresh(null, [])
    expect(table.defaultPlan).toBe("configured")
    expect(table.overrides.size).toBe(0)
  })

  it("stored plans: JSON in milliseconds, absent fields left out; what is not JSON is read as itself", () => {
    const json = PlanTable.toJson({
      tiers: [
        { name: "spike", algorithm: "gcra", limit: 10, periodMs: 1000, burst: 20 },
        { name: "count", algorithm: "sliding-window", limit: 100, periodMs: 3_600_000 }
      ],
      blockForMs: 500
    })
    expect(JSON.parse(json)).toEqual({
      tiers: [
        { name: "spike", algorithm: "gcra", limit: 10, period: 1000, burst: 20 },
        { name: "count", algorithm: "sliding-window", limit: 100, period: 3_600_000 }
      ],
      blockFor: 500
    })
    expect(PlanTable.toJson({ tiers: [] })).toBe('{"tiers":[]}')
    expect(PlanTable.fromStored(json)).toEqual(JSON.parse(json))
    expect(PlanTable.fromStored("{oops")).toBe("{oops")
  })
})
