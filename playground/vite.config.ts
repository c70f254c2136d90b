import { defineConfig } from "vite"

export default defineConfig({
  // Relative URLs: the built folder works from any static host, at any path.
  base: "./",
  // The workspace packages' TypeScript sources (their `@sluice/source` export), as the demo
  // and the tests use them: no `npm run build` first, and the page runs exactly the code in
  // the repository.
  resolve: { conditions: ["@sluice/source"] },
  worker: { format: "es" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // The timings report is a build-speed hint, noise in `npm run playground` and the test output.
    rolldownOptions: { checks: { pluginTimings: false } }
  }
})
