// Graceful shutdown for every entry point: the parts a process started are
// stopped in reverse order on SIGINT/SIGTERM. A second signal exits at once.

/**
 * @param {import('pino').Logger} log
 */
export function createLifecycle (log) {
  /** @type {{ name: string, stop: () => unknown }[]} */
  const parts = []
  let stopping = null

  /** @param {string} reason */
  async function stopAll (reason) {
    stopping ??= (async () => {
      log.info({ reason }, 'shutting down')
      for (const part of parts.reverse()) {
        try {
          await part.stop()
          log.debug({ part: part.name }, 'stopped')
        } catch (/** @type {any} */ err) {
          log.warn({ part: part.name, err: err.message }, 'error while stopping')
        }
      }
    })()
    return stopping
  }

  return {
    /**
     * Register something to stop; later registrations stop first.
     * @param {string} name
     * @param {() => unknown} stop
     */
    add (name, stop) {
      parts.push({ name, stop })
    },
    stopAll,
    /**
     * Stop everything on the first SIGINT/SIGTERM, then exit.
     * @param {{ exit?: boolean, exitCode?: number }} [o] exitCode: 0 for a service told to stop; 130 for a run cut short
     */
    handleSignals ({ exit = true, exitCode = 0 } = {}) {
      let signals = 0
      const onSignal = (/** @type {NodeJS.Signals} */ sig) => {
        if (++signals > 1) {
          log.warn('second signal: exiting without finishing shutdown')
          process.exit(130)
        }
        stopAll(sig).finally(() => { if (exit) process.exit(exitCode) })
      }
      process.on('SIGINT', onSignal)
      process.on('SIGTERM', onSignal)
    }
  }
}
