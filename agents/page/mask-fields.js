// Runs in the page. Draws every field whose value is one of `values` masked
// (as a password field is), before a screenshot of the page is taken.
/** @param {string[]} values */
export function maskFields (values) {
  for (const e of document.querySelectorAll('input, textarea')) {
    const field = /** @type {HTMLInputElement} */ (e)
    if (values.includes(field.value)) field.style.setProperty('-webkit-text-security', 'disc')
  }
}
