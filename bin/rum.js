// `h3lens rum`: real users' sites (their public keys and the origins their
// beacons must come from) and the countries each location stands for.
// docs/RUM.md.
import { createSite, getSite, listSites, revokeSite, updateSite } from '../lib/store/rum-sites.js'
import { getLocation, setLocationCountries } from '../lib/store/locations.js'
import { idOf } from './args.js'
import { currentSnippet, installTag, snippetSource } from '../lib/measurement/rum/snippet.js'

export const RUM_USAGE = `Usage: h3lens rum sites create --name NAME --origin https://www.example.com [--origin ...] [--sample RATE]
       h3lens rum sites list
       h3lens rum sites tag ID
       h3lens rum sites update ID [--name NAME] [--origin ...] [--sample RATE]
       h3lens rum sites revoke ID
       h3lens rum countries --location ID [CC[,CC...]]   (without a list, prints them; an empty list "" clears them)

Real users: a site's pages send one beacon per page view to this h3lens
(POST /rum/v1/beacon) with the protocol, connection phases and web vitals of
the visit. "create" prints the site's install tag: one <script> element for
the <head> of its pages, pinned by its integrity hash. Beacons are accepted
only with an Origin header among the site's origins. --sample is the share
of page views that send one (default 1). "revoke" refuses its beacons from
then on (within 10 s). "countries" says which countries a location stands
for, so real users from there are shown under it beside the lab.

Options:
  --name NAME             what the site is
  --origin URL            an origin its pages are served from (several allowed)
  --sample RATE           above 0, at most 1
  --location ID           the location whose countries are set
  --base-url URL          the address browsers reach this h3lens at (H3LENS_PUBLIC_URL; default http://127.0.0.1:$PORT)`

/**
 * @param {{ pool: import('pg').Pool, config: import('../lib/runtime/config.js').Config }} ctx
 * @param {Record<string, any>} values
 * @param {string[]} positionals
 */
export async function runRum ({ pool, config }, values, positionals) {
  /** @type {(message: string) => never} */
  const fail = (message) => { throw Object.assign(new Error(message), { userFacing: true }) }
  const [group, sub, arg] = positionals
  const baseUrl = values['base-url'] ?? config.publicUrl ?? config.apiUrl
  const baseField = values['base-url'] !== undefined ? '--base-url' : 'the base URL'
  const tag = (/** @type {Record<string, any>} */ site) => installTag({ baseUrl, key: site.key, sampleRate: site.sample_rate, snippet: currentSnippet(), field: baseField })
  // The commands that print a tag check its address before they change anything.
  if (group === 'sites' && ['create', 'tag', 'update'].includes(sub)) snippetSource({ baseUrl, snippet: currentSnippet(), field: baseField })
  const siteId = () => {
    const id = idOf(arg)
    if (id === null) fail(`rum sites ${sub} needs the id of a site (see "h3lens rum sites list"), not "${arg ?? ''}"`)
    return id
  }
  // A rate is written in decimal: Number() alone reads "0x1" as 1.
  if (values.sample !== undefined && !/^\d+(\.\d+)?$/.test(values.sample)) fail(`--sample must be a share from 0 to 1 written in decimal, such as 0.25, not "${values.sample}"`)
  const sample = values.sample === undefined ? undefined : Number(values.sample)
  if (group === 'countries') {
    if (!values.location) fail('rum countries needs --location ID and a list of country codes such as US,CA')
    // Without a list, it shows the countries and changes nothing; an empty list "" clears them.
    const location = sub === undefined
      ? await getLocation(pool, values.location)
      : await setLocationCountries(pool, values.location, countryList(String(sub), fail))
    if (!location) fail(`there is no location ${values.location} (see "h3lens agents list" or GET /api/v1/locations)`)
    console.log(`${location.id}\t${location.countries?.join(',') ?? '(none)'}`)
    return
  }
  if (group !== 'sites') fail(`unknown rum command "${group ?? ''}"; use "rum sites ..." or "rum countries ..."`)
  if (sub === 'create') {
    if (!values.name || !values.origin?.length) fail('rum sites create needs --name NAME and at least one --origin https://...')
    const site = await createSite(pool, { name: values.name, origins: values.origin, sample_rate: sample })
    console.error(`site ${site.id} (${site.name}) created for ${site.origins.join(', ')}; put this in the <head> of its pages:`)
    console.log(tag(site))
  } else if (sub === 'list') {
    for (const s of await listSites(pool, { includeRevoked: true })) {
      console.log([s.id, s.name, s.origins.join(','), `sample ${s.sample_rate}`, s.key, s.revoked_at ? `revoked ${s.revoked_at.toISOString()}` : 'active'].join('\t'))
    }
  } else if (sub === 'tag') {
    console.log(tag(await getSite(pool, siteId())))
  } else if (sub === 'update') {
    const site = await updateSite(pool, siteId(), { name: values.name, origins: values.origin?.length ? values.origin : undefined, sample_rate: sample })
    console.error(`site ${site.id} updated; its install tag${sample === undefined ? '' : ' (the pages sample at the rate of the tag they carry: replace it for the new rate to apply)'}:`)
    console.log(tag(site))
  } else if (sub === 'revoke') {
    const site = await revokeSite(pool, siteId())
    console.log(`site ${site.id} (${site.name}) revoked: its beacons are refused from now on`)
  } else {
    fail(`unknown rum sites command "${sub ?? ''}"; use create, list, tag, update or revoke`)
  }
}

/**
 * "GB,DE" → ['GB', 'DE']; "" (or only spaces) clears the list. An empty
 * place in a list (",", "GB,,DE") is a mistake, not a request to clear.
 * @param {string} text
 * @param {(message: string) => never} fail
 */
function countryList (text, fail) {
  if (!text.trim()) return []
  const codes = text.split(',').map((c) => c.trim())
  const empty = codes.indexOf('')
  if (empty >= 0) fail(`rum countries: place ${empty + 1} of "${text}" is empty; give codes such as GB,DE, or "" to clear the list`)
  return codes
}
