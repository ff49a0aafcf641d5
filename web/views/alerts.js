// Alerts: what fires now, the history of changes, the rules and the
// channels. Rules and channels are added with forms that check each field
// before sending and show the API's answer next to the field it names.
import { api } from '../api.js'
import { h, ago, ask, emptyState, plainText, toast } from '../dom.js'
import { href } from '../query.js'
import { alertTitle } from '../components/alert-badges.js'
import { ruleForm, channelForm, ruleText } from '../components/alert-forms.js'

export async function render (ctx) {
  const [alerts, rules, channels, monitors, locations] = await Promise.all([
    api.alerts({ limit: 50 }), api.rules(), api.channels(), api.monitors(), api.locations()])
  const firing = alerts.current.filter((a) => a.state === 'firing')
  const others = alerts.current.filter((a) => a.state !== 'firing')
  const monitorName = (id) => { const m = monitors.find((x) => x.id === id); return m ? (m.label || m.url) : `monitor ${id}` }
  const after = () => ctx.rerender()

  return [
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', {}, 'Alerts'),
        h('p', { class: 'sub' }, firing.length ? `${firing.length} firing now.` : 'Nothing is firing.', ' Rules are evaluated by the scheduler every H3LENS_ALERT_EVAL_S seconds (every minute by default); a rule fires after its evaluations in a row and resolves after as many clear ones.'))),
    panel('firing', 'Firing now', firing.length
      ? alertTable(firing, monitorName)
      : emptyState('Nothing is firing', 'When a rule trips, it shows here with a link to the comparison that tripped it.')),
    others.length ? panel('recent', 'Pending and resolved', alertTable(others, monitorName)) : null,
    panel('history', 'History', alerts.history.length ? historyTable(alerts.history, monitorName) : emptyState('No changes yet', null)),
    panel('rules', 'Rules', [
      rulesTable(rules, channels, monitorName, after),
      h('details', { class: 'add-form', id: 'add-rule' }, h('summary', {}, 'Add a rule'), ruleForm({ monitors, locations, channels, onSaved: after }))
    ]),
    panel('channels', 'Channels', [
      channels.length ? channelsTable(channels, after) : emptyState('No channels', 'Add a webhook to be told when a rule fires and resolves.'),
      h('details', { class: 'add-form', id: 'add-channel' }, h('summary', {}, 'Add a webhook'), channelForm({ onSaved: after }))
    ])
  ]
}

function panel (id, title, body) {
  return h('section', { class: 'panel', id, 'aria-labelledby': `${id}-title` },
    h('div', { class: 'panel-head' }, h('h2', { id: `${id}-title` }, title)), h('div', { class: 'section-body flush' }, body))
}

function stateBadge (state) {
  return h('span', { class: `badge state-${state}` }, state)
}

function alertTable (alerts, monitorName) {
  return h('div', { class: 'table-scroll' }, h('table', { class: 'grid alerts-table' },
    h('thead', {}, h('tr', {}, ['State', 'Alert', 'Monitor', 'Severity', 'Since', 'Evidence'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, alerts.map((a) => h('tr', { 'data-rule': a.rule_id, 'data-location': a.location_id },
      h('td', {}, stateBadge(a.state)),
      h('td', { class: 'summary' }, h('b', {}, alertTitle(a)), h('div', { class: 'sub' }, evidenceText(a))),
      h('td', {}, h('a', { href: href(`/monitors/${a.monitor_id}`) }, monitorName(a.monitor_id))),
      h('td', {}, a.severity),
      h('td', { title: a.since }, ago(a.since)),
      h('td', {}, a.evidence?.link ? h('a', { href: a.evidence.link, class: 'evidence-link' }, 'Open the comparison') : '—'))))))
}

function historyTable (events, monitorName) {
  return h('div', { class: 'table-scroll' }, h('table', { class: 'grid alerts-table history' },
    h('thead', {}, h('tr', {}, ['When', 'Change', 'Alert', 'Monitor', 'Evidence'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, events.map((e) => h('tr', {},
      h('td', { title: e.at }, ago(e.at)),
      h('td', {}, stateBadge(e.previous), ' → ', stateBadge(e.state)),
      h('td', { class: 'summary' }, alertTitle(e), h('div', { class: 'sub' }, evidenceText(e))),
      h('td', {}, monitorName(e.monitor_id)),
      h('td', {}, e.evidence?.link ? h('a', { href: e.evidence.link }, 'Comparison') : '—'))))))
}

/** The evidence in words, as the comparison table shows it. */
function evidenceText (a) {
  const e = a.evidence ?? {}
  const n = (v, d = 1) => (v == null ? '—' : Number(v).toFixed(d))
  if (a.kind === 'h3_regression') {
    return `p${e.percentile} ${e.metric}: H3 ${n(e.h3_ms)} ms vs H2 ${n(e.h2_ms)} ms (Δ ${e.delta_pct >= 0 ? '+' : ''}${n(e.delta_pct)}%, 95% CI ${n(e.ci_low_ms)}…${n(e.ci_high_ms)} ms), ${e.rounds_used ?? 0} rounds, verdict ${e.verdict}`
  }
  if (a.kind === 'h3_failure') return `H3 lost ${n(e.h3_lost_pct)}% of ${e.h3_attempted} loads; failure test: ${e.failure_verdict}`
  if (a.kind === 'error_rate') return `worst arm failure rate ${n(e.worst_pct)}%`
  if (a.kind === 'h3_share_drop') return e.text ?? e.reason ?? '—'
  const due = e.due_rounds ?? 0
  return `${due} round${due === 1 ? '' : 's'} due, ${e.answered_rounds ?? 0} answered; last result ${e.last_result_at ? ago(e.last_result_at) : 'none in the window'}`
}

function rulesTable (rules, channels, monitorName, after) {
  if (!rules.length) return emptyState('No rules', 'Add one below.')
  const channelName = (id) => channels.find((c) => c.id === id)?.name ?? `#${id}`
  return h('div', { class: 'table-scroll' }, h('table', { class: 'grid alerts-table rules' },
    h('thead', {}, h('tr', {}, ['Rule', 'Applies to', 'Severity', 'Notifies', ''].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rules.map((r) => h('tr', { 'data-rule-id': r.id },
      h('td', { class: 'summary' }, h('b', {}, ruleText(r)), r.description ? h('div', { class: 'sub' }, r.description) : null),
      h('td', {}, r.monitor_id ? monitorName(r.monitor_id) : 'every monitor', r.locations ? ` · ${r.locations.join(', ')}` : ''),
      h('td', {}, r.severity),
      h('td', {}, r.channels.length ? r.channels.map(channelName).join(', ') : h('span', { class: 'muted' }, 'dashboard and /metrics only')),
      h('td', {}, h('button', {
        type: 'button',
        class: 'secondary small',
        'aria-label': `Delete rule ${r.id}`,
        onclick: async () => {
          if (!ask(`Delete the rule "${ruleText(r)}" and its alert history?`)) return
          await api.deleteRule(r.id).then(after, (err) => toast(err.message))
        }
      }, 'Delete')))))))
}

function channelsTable (channels, after) {
  return h('div', { class: 'table-scroll' }, h('table', { class: 'grid alerts-table channels' },
    h('thead', {}, h('tr', {}, ['Name', 'URL', 'Format', ''].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, channels.map((c) => {
      const result = h('span', { class: 'test-result', role: 'status' })
      return h('tr', { 'data-channel-id': c.id },
        h('td', {}, c.name), h('td', { class: 'ellipsis', title: c.url }, c.url), h('td', {}, c.format),
        h('td', {},
          h('button', {
            type: 'button',
            class: 'secondary small',
            onclick: async () => {
              result.textContent = 'Sending…'
              try {
                const r = await api.testChannel(c.id)
                result.className = `test-result ${r.ok ? 'ok' : 'bad'}`
                result.textContent = plainText(r.ok ? `Delivered (HTTP ${r.status_code})` : `Failed: ${r.error}`)
              } catch (/** @type {any} */ err) {
                result.className = 'test-result bad'
                result.textContent = plainText(err.message)
              }
            }
          }, 'Send test'), ' ',
          h('button', { type: 'button', class: 'secondary small', onclick: () => ask(`Delete the channel "${c.name}"?`) && api.deleteChannel(c.id).then(after, (err) => toast(err.message)) }, 'Delete'),
          result))
    }))))
}
