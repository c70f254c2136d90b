import { defineConfig } from "vitest/config"

// The multi-process quota test runs 8 worker processes and two busy loops: it is run alone, after
// every other file (its own group), so its CPU load does not reach the timing-sensitive tests and
// theirs does not add to the load it is specified with.
const alone = ["packages/quota/test/RedisProcesses.test.ts"]

export default defineConfig({
  resolve: {
    conditions: ["@sluice/source"]
  },
  ssr: {
    resolve: {
      conditions: ["@sluice/source"]
    }
  },
  test: {
    reporters: ["default", ["json", { outputFile: ".vitest-report.json" }]],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        // The kernel's own tests: plain vitest, nothing of Effect (`npm run test:kernel`).
        extends: true,
        test: {
          name: "kernel",
          include: ["packages/kernel/test/**/*.test.ts"]
        }
      },
      {
        extends: true,
        test: {
          name: "sluice",
          include: [
            "packages/*/test/**/*.test.ts",
            "examples/**/*.test.ts",
            "bench/**/*.test.ts",
            "test/**/*.test.ts",
            "playground/test/**/*.test.ts"
          ],
          exclude: ["**/node_modules/**", "**/dist/**", "packages/kernel/**", ...alone]
        }
      },
      {
        extends: true,
        test: {
          name: "processes",
          include: alone,
          sequence: { groupOrder: 1 }
        }
      }
    ]
  }
})
