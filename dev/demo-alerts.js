// Alerts over the dashboard's demo data (dev/demo-data.js seedDemo): on
// the lossy Asia path one H3 load in six times out, so an h3_failure rule
// over the seeded hours fires there. Shared by test/ui-alerts.test.js and
// scripts/screenshots.js.
import { createRule } from '../lib/store/alert-rules.js'
import { createChannel } from '../lib/store/alert-channels.js'
import { evaluateAlerts } from '../lib/analysis/alerts.js'

/**
 * @param {import('pg').Pool} db
 * @param {{ hours: number }} o the hours seedDemo seeded
 */
export async function seedAlerts (db, { hours }) {
  const channel = await createChannel(db, { kind: 'webhook', name: 'On-call', url: 'http://127.0.0.1:9/h3lens', secret: 'demo-secret-0123456789', format: 'json' }, { allowPrivateTargets: true })
  const rule = await createRule(db, {
    kind: 'h3_failure', threshold_pct: 5, window_s: hours * 3600, evaluations: 1, severity: 'critical',
    description: 'HTTP/3 loses more than 5% of loads over the seeded window', channels: [channel.id]
  })
  const { changes } = await evaluateAlerts(db, { now: new Date(), intervalS: 0 })
  return { channel, rule, changes }
}
