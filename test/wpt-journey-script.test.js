// A journey as a WebPageTest script: each action's command, named steps as
// the recorded ones (logData), and the steps without a faithful WPT form
// named with why, so that the journey runs on Puppeteer agents only.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { wptScript } from '../lib/measurement/wpt/journey-script.js'
import { checkJourney } from '../lib/measurement/journey/steps.js'

const journey = (steps) => checkJourney({ steps }, { url: 'https://shop.example/' })

test('each translatable action becomes its command, and named steps are the recorded ones', () => {
  const { script, untranslatable } = wptScript(journey([
    { action: 'navigate', url: '/login', name: 'open' },
    { action: 'type', selector: '#user', text: 'demo "user"' },
    { action: 'select', selector: 'select[name=size]', value: 'M' },
    { action: 'measure_start', name: 'login' },
    { action: 'click', selector: '#login' },
    { action: 'wait_for', selector: '.account' },
    { action: 'measure_end', name: 'login' },
    { action: 'wait_for', ms: 2000 },
    { action: 'eval', script: 'window.scrollTo(0, 500)', name: 'scroll' }
  ]))
  assert.equal(untranslatable, null)
  assert.deepEqual(script.trimEnd().split('\n'), [
    'logData\t0',
    'logData\t1',
    'navigate\thttps://shop.example/login',
    'logData\t0',
    'exec\t(function(e){e.value="demo \\"user\\"";e.dispatchEvent(new Event(\'input\',{bubbles:true}))})(document.querySelector("#user"))',
    'exec\t(function(e){e.value="M";e.dispatchEvent(new Event(\'change\',{bubbles:true}))})(document.querySelector("select[name=size]"))',
    'logData\t1',
    'execAndWait\tdocument.querySelector("#login").click()',
    'waitFor\tdocument.querySelector(".account")!==null',
    'logData\t0',
    'sleep\t2',
    'logData\t1',
    'execAndWait\twindow.scrollTo(0, 500)',
    'logData\t0'
  ])
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
