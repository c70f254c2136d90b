// @ts-check
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", "out/**", ".snippets/**", ".snippets-run/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-namespace": "off",
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: "Read time through Effect's Clock (docs/ARCHITECTURE.md §1)."
        }
      ]
    }
  },
  {
    // The kernel has no runtime dependency: time and randomness are parameters, failures values.
    files: ["packages/kernel/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: [
                "effect",
                "effect/*",
                "@effect/*",
                "ioredis",
                "@sluice/*",
                "!@sluice/kernel",
                "!@sluice/kernel/*"
              ],
              message: "The kernel imports nothing of Effect, ioredis or the bindings."
            }
          ]
        }
      ]
    }
  },
  {
    // Plain JavaScript scripts run on Node; TypeScript files are checked by tsc instead.
    files: ["**/*.js", "**/*.mjs", "**/*.cjs"],
    languageOptions: {
      globals: { console: "readonly", process: "readonly", URL: "readonly", Buffer: "readonly" }
    }
  },
  {
    files: ["bench/**", "examples/**", "**/test/**", ".ci/**"],
    rules: { "no-restricted-syntax": "off" }
  }
)
