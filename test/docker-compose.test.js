// docker-compose.yml is for users' machines (no Docker engine runs here), so
// it is checked by reading it: the services exist, run real subcommands, and
// set only variables the code reads.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { parse } from 'yaml'
import { VARIABLES } from '../lib/config.js'
import { COMMANDS } from '../bin/commands.js'

const compose = parse(fs.readFileSync(new URL('../docker-compose.yml', import.meta.url), 'utf8'), { merge: true })
const known = new Set(VARIABLES.map((v) => v.name))

test('compose has TimescaleDB, a one-shot migrate, api, scheduler and three agents', () => {
  const s = compose.services
  assert.match(s.db.image, /^timescale\/timescaledb:/)
  assert.deepEqual(s.migrate.command, ['node', 'bin/h3lens.js', 'migrate'])
  assert.equal(s.migrate.restart, 'no')
  assert.equal(s.api.command[2], 'api')
  assert.equal(s.scheduler.command[2], 'scheduler')
  const agents = Object.entries(s).filter(([, svc]) => svc.command?.[2] === 'agent')
  assert.equal(agents.length, 3)
  const locations = agents.map(([, svc]) => svc.environment.H3LENS_LOCATION)
  assert.equal(new Set(locations).size, 3, 'agents are in different locations')
})

test('every h3lens service runs an existing subcommand with variables the code reads', () => {
  for (const [name, svc] of Object.entries(compose.services)) {
    if (name === 'db') continue
    assert.ok(COMMANDS[svc.command[2]], `${name} runs unknown subcommand ${svc.command[2]}`)
    for (const v of Object.keys(svc.environment ?? {})) assert.ok(known.has(v), `${name} sets ${v}, which h3lens does not read`)
  }
})

test('api, scheduler and migrate reach the db service; agents reach the api and carry a token', () => {
  for (const name of ['api', 'scheduler', 'migrate']) {
    const url = new URL(compose.services[name].environment.DATABASE_URL.replace(/\$\{[^}]+\}/g, 'x'))
    assert.equal(url.hostname, 'db')
  }
  assert.equal(compose.services.api.environment.HOST, '0.0.0.0', 'api must listen beyond the container loopback')
  for (const [name, svc] of Object.entries(compose.services).filter(([, s]) => s.command?.[2] === 'agent')) {
    assert.equal(new URL(svc.environment.H3LENS_API_URL).hostname, 'api', name)
    assert.match(svc.environment.H3LENS_AGENT_TOKEN, /AGENT_TOKEN_/, name)
  }
})
