// Test helper: runs one of the repository's TypeScript scripts in a child Node process
// (tsx, with the workspace-source export condition) and resolves with its output.
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

/** Runs `script` (a path relative to the repository root) with `args`; rejects with stderr on failure. */
export const runScript = (script: string, args: ReadonlyArray<string>, timeoutMs = 90_000) =>
  new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "--conditions=@sluice/source", script, ...args],
      { cwd: root, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve({ stdout, stderr })
    )
  })
