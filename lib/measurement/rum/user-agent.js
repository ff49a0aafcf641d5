// A visitor's browser, reduced to its family and major version: all h3lens
// keeps of a User-Agent header (docs/PRIVACY.md). Order matters: Edge, Opera
// and Samsung Internet also say "Chrome/", and every Chromium also says
// "Safari/".

/** Browser families as stored. */
export const BROWSER_FAMILIES = Object.freeze(['chrome', 'edge', 'firefox', 'safari', 'samsung', 'opera', 'other'])

/** @type {[string, RegExp][]} */
const RULES = [
  ['edge', /\bEdg(?:e|A|iOS)?\/(\d+)/],
  ['opera', /\b(?:OPR|OPT)\/(\d+)/],
  ['samsung', /\bSamsungBrowser\/(\d+)/],
  ['firefox', /\b(?:Firefox|FxiOS)\/(\d+)/],
  ['chrome', /\b(?:HeadlessChrome|Chrome|Chromium|CriOS)\/(\d+)/],
  ['safari', /\bVersion\/(\d+)[\d.]* (?:Mobile\/\S+ )?Safari\//]
]

/**
 * @param {string | undefined} userAgent
 * @returns {{ family: typeof BROWSER_FAMILIES[number], major: number | null }}
 */
export function browserOf (userAgent) {
  // Real ones are under 300 characters; the cap bounds the regular expressions' work.
  const ua = String(userAgent ?? '').slice(0, 512)
  for (const [family, re] of RULES) {
    const m = re.exec(ua)
    if (m) {
      const major = Number(m[1])
      return { family: /** @type {any} */ (family), major: major >= 1 && major <= 999 ? major : null }
    }
  }
  return { family: 'other', major: null }
}
