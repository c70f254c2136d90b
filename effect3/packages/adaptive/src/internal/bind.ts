/**
 * Makes the named prototype methods of `self` own properties bound to `self`, so a
 * service value's functions work when passed unbound (`call.pipe(limiter.withLimiter)`,
 * `Effect.flatMap(x, monitor.exceeded)`). Done once per instance, at construction:
 * nothing is added to any per-call path.
 *
 * @internal
 */
export const bindMethods = <T extends object>(self: T, names: ReadonlyArray<string>): T => {
  for (const name of names) {
    const method = (self as any)[name]
    if (typeof method === "function" && !Object.prototype.hasOwnProperty.call(self, name)) {
      Object.defineProperty(self, name, {
        value: method.bind(self),
        writable: true,
        configurable: true,
        enumerable: false
      })
    }
  }
  return self
}
