import { defineConfig } from "vitest/config"

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
    include: [
      "packages/*/test/**/*.test.ts",
      "examples/**/*.test.ts",
      "bench/**/*.test.ts",
      "test/**/*.test.ts"
    ],
    exclude: ["**/node_modules/**", "**/dist/**"],
    reporters: ["default", ["json", { outputFile: ".vitest-report.json" }]],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
