import { defineConfig } from "vitest/config"

// The 3.x line's tests: the bindings' unit tests, the system tests over sockets and the
// pack-and-consume test. The multi-process quota test runs alone, after every other file.
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
        extends: true,
        test: {
          name: "effect3",
          include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
          exclude: ["**/node_modules/**", "**/dist/**", ...alone]
        }
      },
      {
        extends: true,
        resolve: {
          alias: [{ find: /^ioredis$/, replacement: "ioredis6" }]
        },
        test: {
          name: "effect3-ioredis6",
          include: onIoredis6,
          env: { IOREDIS_MAJOR: "6" }
        }
      },
      {
        extends: true,
        test: {
          name: "effect3-processes",
          include: alone,
          sequence: { groupOrder: 1 }
        }
      }
    ]
  }
})
