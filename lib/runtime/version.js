import { readFileSync } from 'node:fs'

/** The h3lens version, from package.json. */
export const VERSION = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version
