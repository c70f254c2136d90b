// Loaded with `--import` (after tsx) by NoIoredis.test.ts: resolving `ioredis` (or a file of it)
// throws, from `import` and from `require` alike, as if ioredis were not installed.
import { register, registerHooks } from "node:module"

const blocked = (specifier) => specifier === "ioredis" || specifier.startsWith("ioredis/")
const refuse = (specifier) => {
  const error = new Error(`ioredis is not installed (blocked by block-ioredis.mjs): "${specifier}"`)
  error.code = "ERR_MODULE_NOT_FOUND"
  return error
}

// in-thread hooks: `require` and `import` (Node 22.15 and later)
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (blocked(specifier)) throw refuse(specifier)
    return nextResolve(specifier, context)
  }
})

// and the loader thread's chain, where tsx resolves the modules it compiles: registered after
// tsx's hooks, this one runs before them
register(
  "data:text/javascript," +
    encodeURIComponent(`
      export async function resolve(specifier, context, nextResolve) {
        if (specifier === "ioredis" || specifier.startsWith("ioredis/")) {
          const error = new Error('ioredis is not installed (blocked by block-ioredis.mjs): "' + specifier + '"')
          error.code = "ERR_MODULE_NOT_FOUND"
          throw error
        }
        return nextResolve(specifier, context)
      }
    `)
)
