// Settings mistyped: an H3LENS_ variable no setting reads would otherwise be
// ignored in silence. Its own module, as it imports an npm package and
// config.js is read before `npm ci` (bin/h3lens.js).
import { distance } from 'fastest-levenshtein'
import { VARIABLES } from './config.js'

/**
 * H3LENS_ variables that are no settings yet are h3lens's own: what it sets
 * for the Chromium it starts in a lab namespace, what tests and benches read
 * (docs/TESTING.md), and what docker-compose.yml reads (docs/DEPLOY.md).
 */
const OWN_VARIABLES = ['H3LENS_NETNS', 'H3LENS_JOURNEY_SCREENSHOTS', 'H3LENS_COMPOSE_FIREFOX']
const OWN_PREFIXES = ['H3LENS_TEST_', 'H3LENS_FUZZ_', 'H3LENS_BENCH_']

/**
 * The H3LENS_ variables of `env` that no setting reads (a mistyped name
 * would otherwise be ignored in silence), each with the setting nearest
 * it by spelling when one is near.
 * @param {Record<string, string | undefined>} env
 * @returns {string[]} one warning each
 */
export function unknownVariables (env) {
  /** @type {string[]} */
  const known = VARIABLES.map((v) => v.name)
  return Object.keys(env)
    .filter((name) => name.startsWith('H3LENS_') && !known.includes(name) && !OWN_VARIABLES.includes(name) && !OWN_PREFIXES.some((p) => name.startsWith(p)))
    .sort()
    .map((name) => {
      // Near: a quarter of the name after H3LENS_ differs at most.
      const [nearest] = known.map((k) => ({ k, d: distance(name, k) })).sort((a, b) => a.d - b.d)
      const hint = nearest && nearest.d <= Math.max(1, Math.floor((name.length - 'H3LENS_'.length) / 4)) ? `; did you mean ${nearest.k}?` : ''
      return `${name} is not a setting of h3lens and is ignored${hint} (docs/CONFIGURATION.md lists them)`
    })
}
