/**
 * Runs at most `perTurn` callbacks per turn of Node's event loop, the rest in order on the
 * turns that follow (a `setImmediate` per turn while any wait). Fewer resumptions per turn
 * make the work they start leave in several socket writes with a client that writes all the
 * commands of one turn at once (node-redis): Redis runs the first writes while this process
 * builds the rest, instead of the two taking turns on one batch of every call in flight.
 *
 * @internal
 */
export const make = (perTurn: number): ((run: () => void) => void) => {
  /** callbacks run in the current turn (reset by the turn that follows any run) */
  let ran = 0
  let scheduled = false
  const waiting: Array<() => void> = []
  let head = 0
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(turn)
  }
  const turn = () => {
    scheduled = false
    ran = 0
    while (ran < perTurn && head < waiting.length) {
      ran++
      const run = waiting[head]!
      waiting[head++] = undefined!
      run()
    }
    if (head === waiting.length) {
      waiting.length = 0
      head = 0
    }
    // the next turn resets this turn's count (and runs what still waits)
    if (ran > 0) schedule()
  }
  return (run) => {
    if (head === waiting.length && ran < perTurn) {
      ran++
      schedule()
      run()
      return
    }
    waiting.push(run)
    schedule()
  }
}
