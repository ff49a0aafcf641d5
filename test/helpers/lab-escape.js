// A lab run that tries to leave the lab: a journey on the lab origin whose
// script fetches another port of the lab host name, this machine's loopback
// by address and by name, and a name outside the lab, all on the port of a
// service listening on loopback (startInternalService). In local mode the
// lab's address is this machine's loopback, so each would reach that
// service if the lab browser let it; the step throws, naming what it
// reached. Chromium (test/target-guard-agent.test.js) and Firefox
// (test/target-guard-firefox.test.js) run it through the agent's job runner.
import { checkJourney } from '../../lib/measurement/journey/steps.js'
import { LAB_HOSTNAME, LAB_ALT_HOSTNAME } from '../../lib/runtime/lab-host.js'

/**
 * @param {{ id: number, pageUrl: string, port: number, browser: string }} o
 *   pageUrl: a page of the lab origin; port: the internal service's
 */
export function labEscapeJob ({ id, pageUrl, port, browser }) {
  const targets = [
    `https://${LAB_HOSTNAME}:${port}/`, `https://${LAB_ALT_HOSTNAME}:${port}/`,
    `http://127.0.0.1:${port}/`, `https://127.0.0.1:${port}/`, `http://localhost:${port}/`, `https://elsewhere.example:${port}/`
  ]
  const script = `const urls = ${JSON.stringify(targets)};
const tried = await Promise.all(urls.map((u) => fetch(u, { mode: 'no-cors' }).then(() => u + ' reached', () => u + ' refused')));
const reached = tried.filter((t) => t.endsWith('reached'));
if (reached.length) throw new Error(reached.join(', '));`
  const journey = checkJourney({ steps: [{ action: 'navigate', url: pageUrl }, { action: 'eval', script, name: 'escape' }] }, { url: pageUrl })
  return { id, url: pageUrl, modes: ['h2'], probes: ['journey'], journey, browser }
}
