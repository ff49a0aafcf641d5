// The agent's clock for durations, budgets and deadlines: milliseconds on
// the scale of Date.now(), but monotonic. The wall clock can step (NTP
// setting it right, a virtual machine resumed, an operator's date command):
// read from it, a step forward spent a round's whole budget at once (its
// last arms "not run") and a step back held a spooled round's heartbeats
// until its lease ran out. What is stored as a time of day (measured_at)
// stays on the wall clock.

/** Milliseconds since the epoch as this process started, plus its monotonic time since. */
export function monotonicNow () {
  return performance.timeOrigin + performance.now()
}
