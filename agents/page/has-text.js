// Runs in the page. Whether an element matches `selector` and, when `text`
// is given, its text contains it: a journey's assert step.
/**
 * @param {string} selector
 * @param {string | null} text
 */
export function hasText (selector, text) {
  const e = document.querySelector(selector)
  return Boolean(e) && (text === null || (e?.textContent ?? '').includes(text))
}
