// Run by NoIoredis.test.ts: imports each module named on the command line and prints, as one
// line of JSON, its export names or the message of what stopped it loading.
const result = {}
for (const specifier of process.argv.slice(2)) {
  try {
    result[specifier] = { exports: Object.keys(await import(specifier)).sort() }
  } catch (error) {
    result[specifier] = { error: String(error?.message ?? error) }
  }
}
console.log(JSON.stringify(result))
