// Runs in the page. Why the page's own CSS parser refuses `selector`, or
// null when it reads it: a journey step's selector, checked before it is
// waited for.
/**
 * @param {string} selector
 * @returns {string | null}
 */
export function selectorProblem (selector) {
  try {
    document.createDocumentFragment().querySelector(selector)
    return null
  } catch (e) {
    return String(e)
  }
}
