import { defineConfig } from "vitest/config"

// The multi-process quota test runs 8 worker processes and two busy loops: it is run alone, after
// every other file (its own group), so its CPU load does not reach the timing-sensitive tests and
// theirs does not add to the load it is specified with.
const alone = ["packages/quota/test/RedisProcesses.test.ts"]

// The peer range admits ioredis 5 and 6: the Redis store's tests run again with every import of
// `ioredis` (the store's and the tests') resolved to 6.x, installed beside 5.x as `ioredis6`.
const onIoredis6 = ["packages/quota/test/RedisQuota.test.ts", "packages/quota/test/IoredisMajor.test.ts"]

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
        resolve: {
          alias: [{ find: /^ioredis$/, replacement: "ioredis6" }]
        },
        test: {
          name: "ioredis6",
          include: onIoredis6,
          env: { IOREDIS_MAJOR: "6" }
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
