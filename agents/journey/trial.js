// "Try it" on the agent (docs/JOURNEYS.md): a journey run once in the H2
// arm, as a round would run it, for the editor. What comes back is each
// step's outcome and the last frame; nothing of it becomes a result, and a
// secret is scrubbed from it as from a result.
import { measureJourney } from '../probes/journey.js'
import { guardInForce, runConfinement } from '../job-runner.js'
import { journeyTargets } from '../../lib/measurement/journey/steps.js'
import { scrubSecrets, secretValues } from '../../lib/measurement/journey/secrets.js'
import { JOURNEY_LIMITS } from '../../lib/measurement/probes/journey.js'
import { MAX_ERROR_LENGTH, storableText } from '../../lib/runtime/text.js'
import { monotonicNow } from '../clock.js'

/**
 * @param {{ pool: any, lab?: import('../job-runner.js').LabTarget | null, timeoutMs: number, log: import('pino').Logger,
 *   guard?: import('../target-guard.js').TargetGuard | null }} deps
 */
export function createTrialRunner ({ pool, lab = null, timeoutMs, log, guard = null }) {
  /**
   * @param {{ id: number, url: string, journey: import('../probes/journey.js').RunnableJourney }} trial
   * @param {{ allowPrivateTargets?: boolean }} ctx
   * @returns {Promise<{ outcome: Record<string, any>, screenshot: string | null }>}
   */
  return async function runTrial (trial, { allowPrivateTargets = false } = {}) {
    // Confined as a round of the monitor would be (agents/job-runner.js).
    const { isLab, guard: runGuard, extraFlags } = runConfinement({
      url: trial.url, targets: journeyTargets(trial.journey).map(([u]) => u), lab, guard, allowPrivateTargets
    })
    await guardInForce({ guard: runGuard, pool, netns: lab?.netns ?? null })
    const [whole] = await measureJourney({
      pool, url: trial.url, mode: 'h2', extraFlags, netns: lab?.netns ?? null, timeoutMs, log, guard: runGuard, lab: isLab,
      deadline: monotonicNow() + trial.journey.timeout_ms, journey: trial.journey, screenshot: true
    })
    const outcome = {
      status: whole.status,
      error: whole.error ?? null,
      observed_protocol: whole.observed_protocol ?? null,
      steps: whole.journey?.steps ?? []
    }
    log.info({ trial: trial.id, status: outcome.status }, 'journey trial run')
    return { outcome: withinTrialLimits(scrubSecrets(outcome, secretValues(trial.journey))), screenshot: whole.screenshot ?? null }
  }
}

/**
 * A trial's outcome as the API takes it: errors and the addresses steps
 * reached cut to their limits (a page's URL may run to tens of thousands of
 * characters, and an error names it), after its secrets are masked so that
 * a cut never leaves the start of one.
 * @param {{ error: string | null, steps: Record<string, any>[] } & Record<string, any>} outcome
 */
function withinTrialLimits (outcome) {
  const cut = (/** @type {unknown} */ v, /** @type {number} */ max) => (typeof v === 'string' ? storableText(v, max) : v)
  return {
    ...outcome,
    error: cut(outcome.error, MAX_ERROR_LENGTH),
    steps: outcome.steps.map((s) => ({ ...s, error: cut(s.error, MAX_ERROR_LENGTH), url: cut(s.url, JOURNEY_LIMITS.stepUrlChars) }))
  }
}
