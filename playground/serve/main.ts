/**
 * `npm run playground`: builds the static site into playground/dist and serves it
 * (PORT, default 4173). The folder also works as is from any static host.
 */
import { buildPlayground, serveStatic } from "./static.js"

const port = Number(process.env.PORT ?? "4173")
const dir = await buildPlayground()
const { url } = await serveStatic(dir, port)
process.stdout.write(`built ${dir}\nSluice playground: ${url}  (Ctrl-C to stop)\n`)
