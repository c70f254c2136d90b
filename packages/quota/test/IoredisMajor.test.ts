import { describe, expect, it } from "@effect/vitest"
import { Redis } from "ioredis"
import { Redis as Redis6 } from "ioredis6"

// Guards the "ioredis6" test project: its alias must reach every `ioredis` import, or the store
// tests there would run on 5.x again and prove nothing about 6.x.
describe("the ioredis major under test", () => {
  it("is 6.x in the ioredis6 project and 5.x elsewhere", () => {
    expect((Redis as unknown) === Redis6).toBe(process.env.IOREDIS_MAJOR === "6")
  })
})
