// A journey as a WebPageTest script: each action's command, which of them
// are the agent's recorded steps (and so its uploaded step files), and the
// steps without a faithful WPT form named with why, so that the journey runs
// on Puppeteer agents only.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { wptScript } from '../lib/measurement/wpt/journey-script.js'
import { checkJourney } from '../lib/measurement/journey/steps.js'

const journey = (steps) => checkJourney({ steps }, { url: 'https://shop.example/' })

test('each translatable action becomes its command; each navigation, click and script is a recorded step, named after its named step', () => {
  const { script, recorded, labels, untranslatable } = wptScript(journey([
    { action: 'navigate', url: '/login', name: 'open' },
    { action: 'type', selector: '#user', text: 'demo "user"' },
    { action: 'select', selector: 'select[name=size]', value: 'M' },
    { action: 'measure_start', name: 'login' },
    { action: 'click', selector: '#login' },
    { action: 'wait_for', selector: '.account' },
    { action: 'measure_end', name: 'login' },
    { action: 'wait_for', ms: 2000 },
    { action: 'eval', script: 'window.scrollTo(0, 500)', name: 'scroll' },
    { action: 'click', selector: '#more' }
  ]))
  assert.equal(untranslatable, null)
  assert.deepEqual(script.trimEnd().split('\n'), [
    'logData\t1',
    'waitInterval\t0.1',
    'setEventName\topen',
    'navigate\thttps://shop.example/login',
    'exec\t(function(e){e.value="demo \\"user\\"";e.dispatchEvent(new Event(\'input\',{bubbles:true}))})(document.querySelector("#user"))',
    'exec\t(function(e){e.value="M";e.dispatchEvent(new Event(\'change\',{bubbles:true}))})(document.querySelector("select[name=size]"))',
    // WPT's waitFor sets when the next recorded step ends: the click's step lasts until its page has loaded and the element is there,
    // which then leaves a mark the agent records with the step (without it, the element never came).
    'waitFor\tdocument.readyState==="complete"&&document.querySelector(".account")!==null&&(performance.mark("h3lens.wait_for.6"),true)',
    'setEventName\tlogin',
    'execAndWait\tdocument.querySelector("#login").click()',
    'waitFor',
    'sleep\t2',
    'setEventName\tscroll',
    'execAndWait\twindow.scrollTo(0, 500)',
    'setEventName\tstep_10',
    'execAndWait\tdocument.querySelector("#more").click()'
  ])
  assert.deepEqual(recorded, [0, 4, 8, 9], 'WPT step n is journey step recorded[n - 1]')
  assert.deepEqual(labels, ['open', 'login', 'scroll', 'step_10'])
})

test('a named step the agent would not time, and a wait it cannot place, are named with why', () => {
  const nav = { action: 'navigate', url: '/' }
  const typed = wptScript(journey([nav, { action: 'type', selector: '#q', text: 'quic', name: 'query' }]))
  assert.equal(typed.script, null)
  assert.match(typed.untranslatable.step, /^named step "query" \(step 2 \(type #q/)
  assert.match(typed.untranslatable.reason, /times only the steps that navigate, click or run a script/)
  const wait = wptScript(journey([nav, { action: 'type', selector: '#q', text: 'x' }, { action: 'wait_for', selector: '#r' }]))
  assert.equal(wait.untranslatable?.index, 2)
  assert.match(wait.untranslatable.reason, /only as the end of the navigation or click just before it/)
  const across = wptScript(journey([nav, { action: 'click', selector: '#go', name: 'go' }, { action: 'wait_for', selector: '#r', name: 'ready' }]))
  assert.equal(across.untranslatable?.index, 2, 'a wait in another named step than its click')
})

test('a step without a faithful WebPageTest form is named with why', () => {
  const nav = { action: 'navigate', url: '/' }
  /** @type {[Record<string, any>, RegExp][]} */
  const cases = [
    [{ action: 'type', selector: '#pw', secret: 'hunter2' }, /secret/],
    [{ action: 'assert', selector: 'h1', text: 'Account' }, /cannot fail a run/],
    [{ action: 'wait_for', network_idle: true }, /after each recorded step/],
    [{ action: 'wait_for', ms: 1500 }, /whole seconds/],
    [{ action: 'eval', script: 'a()\nb()' }, /one line/],
    [{ action: 'eval', script: 'a()\tb()' }, /a tab/],
    [{ action: 'eval', script: 'a()\u2028b()' }, /one line/],
    [{ action: 'eval', script: 'return document.title === "x"' }, /return false/]
  ]
  for (const [step, why] of cases) {
    const { script, untranslatable } = wptScript(journey([nav, step]))
    assert.equal(script, null, step.action)
    assert.equal(untranslatable?.index, 1)
    assert.match(untranslatable.step, new RegExp(`^step 2 \\(${step.action}`))
    assert.match(untranslatable.reason, why)
    assert.ok(!JSON.stringify(untranslatable).includes('hunter2'), 'a secret is not named')
  }
})

test('typed text stays on its line of the script, whatever it holds', () => {
  const text = 'a\tb\nc\u2028d\u0085e"f'
  const { script } = wptScript(journey([{ action: 'navigate', url: '/', name: 'open' }, { action: 'type', selector: '#q', text }]))
  const line = (script ?? assert.fail('no script')).split('\n').find((l) => l.startsWith('exec\t')) ?? assert.fail('no exec line')
  assert.equal(line.split('\t').length, 2, 'a command and one field')
  assert.doesNotMatch(line, /[\n\u2028\u0085]/)
  // The page gets the text as typed.
  const value = /e\.value=("(?:[^"\\]|\\.)*")/.exec(line)?.[1] ?? assert.fail('no value')
  assert.equal(JSON.parse(value), text)
})
