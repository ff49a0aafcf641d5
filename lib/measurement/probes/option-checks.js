// The checks a probe's own options share (each probe's `check`, ./<id>.js):
// each throws a ValidationError naming the option (`options.<key>`), and
// passes an option that is not set.
import { ValidationError } from '../../runtime/errors.js'

/**
 * @param {Record<string, any>} options
 * @param {string} key
 * @param {{ min: number, max: number }} range
 * @param {string} [unit] what follows the bounds in the message (" bytes (1 KB to 100 MB)")
 */
export function wholeNumber (options, key, { min, max }, unit = '') {
  const v = options[key]
  if (v === undefined) return
  if (!Number.isInteger(v) || v < min || v > max) throw new ValidationError(`options.${key} must be a whole number from ${min} to ${max}${unit}`, `options.${key}`)
}

/**
 * @param {Record<string, any>} options
 * @param {string} key
 */
export function trueOrFalse (options, key) {
  if (options[key] !== undefined && typeof options[key] !== 'boolean') throw new ValidationError(`options.${key} must be true or false`, `options.${key}`)
}

/**
 * @param {Record<string, any>} options
 * @param {string} key
 * @param {readonly string[]} allowed
 */
export function oneOf (options, key, allowed) {
  if (options[key] !== undefined && !allowed.includes(options[key])) throw new ValidationError(`options.${key} must be one of ${allowed.join(', ')}`, `options.${key}`)
}
