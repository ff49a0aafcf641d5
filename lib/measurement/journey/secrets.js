// A journey's secrets on their way: sealed when a journey is stored (the
// steps keep only a reference, { stored: 's…' }, which is all the API ever
// answers), opened when an agent claims a round (the one place the value
// travels, over the agent protocol), and scrubbed from whatever the agent
// sends back, in case a page echoed one (a login that puts the password in
// its URL, an error that quotes a field).
import { randomBytes } from 'node:crypto'
import { ValidationError } from '../../runtime/errors.js'
import { originOf } from '../origin.js'
import { journeyTargets, scriptBesideSecret, SECRET_CHECK_HINT } from './steps.js'

/** What a secret is replaced with wherever one would appear. */
export const SECRET_MASK = '[secret]'

/**
 * Seal the new secrets of a checked journey and keep the stored ones it
 * refers to. A step's string secret becomes { stored: ref }; a reference
 * must be one of `stored` (the monitor's, or the trial's monitor's; null
 * for a trial that names no monitor).
 * Secrets no step refers to any more are dropped.
 *
 * A stored secret goes only where it was given for: `origins`, those of
 * the journey it was stored with (its monitor's URL and navigate steps). A
 * journey that refers to one and navigates anywhere else is refused at
 * that secret: whoever holds a write key could otherwise point the stored
 * password at a page of their own (a trial with its own URL, a journey
 * edited to navigate elsewhere), though the API never shows it. Nor into
 * another field than the one it was given for (`storedIn`, the journey it
 * was stored with): typed into a search box, a page could show it, or an
 * assert step tell what it holds.
 * @param {import('./steps.js').Journey} journey as checkJourney returns it
 * @param {{ box: import('../../runtime/secret-box.js').SecretBox | null | undefined, stored?: Record<string, string> | null, origins?: Set<string>,
 *   storedIn?: { steps: import('./steps.js').Step[] } | null, url?: string, field?: string }} ctx url: the page the journey is checked against (its relative URLs'); origins: where stored secrets may go
 * @returns {{ journey: import('./steps.js').Journey, secrets: Record<string, string> }}
 */
export function sealJourney (journey, { box, stored = {}, origins, storedIn, url, field = 'journey' }) {
  const elsewhere = origins ? journeyOrigins(journey, url).filter((o) => !origins.has(o)) : []
  /** @type {Record<string, string>} */
  const secrets = {}
  const steps = journey.steps.map((s, i) => {
    if (s.secret === undefined) return s
    const at = `${field}.steps[${i}].secret`
    if (typeof s.secret === 'string') {
      if (!box) throw new Error('this process has no secret key to seal a journey\'s secrets with')
      const ref = `s${randomBytes(6).toString('hex')}`
      secrets[ref] = box.seal(s.secret)
      return { ...s, secret: { stored: ref } }
    }
    const ref = s.secret.stored
    const sealed = stored?.[ref]
    if (!sealed && stored === null) throw new ValidationError(`${at}: the secret ${ref} is a monitor's, and this names no monitor (monitor_id) to take it from; give monitor_id, or the secret as text`, at)
    if (!sealed) throw new ValidationError(`${at}: no secret ${ref} is stored with this monitor; give the secret as text again`, at)
    if (elsewhere.length) {
      throw new ValidationError(`${at}: the stored secret ${ref} goes only to ${[...(origins ?? [])].join(', ')}, where it was given for, ` +
        `and this journey also goes to ${elsewhere.join(', ')}; give the secret as text again to send it there`, at)
    }
    const givenFor = storedIn?.steps.find((o) => typeof o.secret === 'object' && o.secret?.stored === ref)?.selector
    if (storedIn && givenFor !== s.selector) {
      throw new ValidationError(`${at}: the stored secret ${ref} is typed only into ${givenFor ?? 'the field it was given for'}, and this step types it into ${s.selector}; ` +
        'give the secret as text again to type it there', at)
    }
    secrets[ref] = sealed
    return s
  })
  return { journey: { ...journey, steps }, secrets }
}

/**
 * The journey as an agent runs it: each secret's value in its step.
 * @param {import('./steps.js').Journey} journey stored form
 * @param {Record<string, string>} secrets sealed, by reference
 * @param {import('../../runtime/secret-box.js').SecretBox} box
 */
export function openJourney (journey, secrets, box) {
  // A journey stored before scripts were refused beside a secret: its
  // secret goes to no agent, whatever the agent's version would do with it.
  const script = scriptBesideSecret(journey.steps)
  if (script !== -1) throw new Error(`step ${script + 1} runs a script (eval) in a journey that types a secret, which could read it; edit the journey: ${SECRET_CHECK_HINT}`)
  return {
    ...journey,
    steps: journey.steps.map((s) => {
      if (s.secret === undefined || typeof s.secret === 'string') return s
      const sealed = secrets?.[s.secret.stored]
      if (!sealed) throw new Error(`the journey's secret ${s.secret.stored} is not stored`)
      return { ...s, secret: box.open(sealed) }
    })
  }
}

/**
 * The secret values of an opened journey.
 * @param {{ steps: { secret?: unknown }[] } | null | undefined} journey
 * @returns {string[]}
 */
export function secretValues (journey) {
  return (journey?.steps ?? []).flatMap((s) => (typeof s.secret === 'string' && s.secret.length ? [s.secret] : []))
}

/**
 * `value` with every occurrence of every secret replaced by SECRET_MASK, as
 * written and as a URL or form would encode it, in every string it holds
 * (keys included). Whatever leaves an agent goes through this first.
 * @template T
 * @param {T} value
 * @param {string[]} secrets
 * @returns {T}
 */
export function scrubSecrets (value, secrets) {
  const forms = [...new Set(secrets.flatMap((s) => [s, encodeURIComponent(s), new URLSearchParams({ s }).toString().slice(2), JSON.stringify(s).slice(1, -1)]))]
    .filter((f) => f.length > 0)
    .sort((a, b) => b.length - a.length)
  if (!forms.length) return value
  const scrub = (/** @type {string} */ s) => forms.reduce((out, f) => out.split(f).join(SECRET_MASK), s)
  /** @type {(v: any) => any} */
  const walk = (v) => {
    if (typeof v === 'string') return scrub(v)
    if (Array.isArray(v)) return v.map(walk)
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [scrub(k), walk(x)]))
    return v
  }
  return /** @type {T} */ (walk(value))
}

/**
 * The origins a journey's page and navigate steps are on.
 * @param {{ steps: import('./steps.js').Step[] } | null | undefined} journey stored or checked form (navigate URLs absolute)
 * @param {string | undefined} url the page it starts from (a monitor's URL)
 * @returns {string[]}
 */
export function journeyOrigins (journey, url) {
  const urls = [url, ...(journey ? journeyTargets(journey).map(([target]) => target) : [])]
  return [...new Set(urls.map(originOf).filter(Boolean))]
}
