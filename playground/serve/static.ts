/**
 * Builds the playground and serves the built folder over loopback HTTP: what
 * `npm run playground` runs, and what the browser test loads.
 */
import { createReadStream } from "node:fs"
import { stat } from "node:fs/promises"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { extname, join, normalize, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"

export const playgroundRoot = resolve(fileURLToPath(new URL("..", import.meta.url)))

/** Builds the static site into `outDir` (default `playground/dist`) with the playground's Vite config. */
export const buildPlayground = async (outDir = join(playgroundRoot, "dist")): Promise<string> => {
  const { build } = await import("vite")
  await build({
    root: playgroundRoot,
    configFile: join(playgroundRoot, "vite.config.ts"),
    logLevel: "warn",
    build: { outDir, emptyOutDir: true }
  })
  return outDir
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json"
}

/** A static file server for `dir` on 127.0.0.1 (`port` 0 picks a free one). */
export const serveStatic = (
  dir: string,
  port = 0
): Promise<{ readonly server: Server; readonly url: string }> => {
  const root = resolve(dir)
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://localhost").pathname)
    const file = normalize(join(root, path.endsWith("/") ? `${path}index.html` : path))
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end()
      return
    }
    stat(file).then(
      (s) => {
        if (!s.isFile()) {
          res.writeHead(404).end()
          return
        }
        res.writeHead(200, {
          "content-type": TYPES[extname(file)] ?? "application/octet-stream",
          "cache-control": "no-cache"
        })
        createReadStream(file).pipe(res)
      },
      () => res.writeHead(404).end()
    )
  })
  return new Promise((ok, fail) => {
    server.once("error", fail)
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address() as AddressInfo
      ok({ server, url: `http://127.0.0.1:${bound}/` })
    })
  })
}
