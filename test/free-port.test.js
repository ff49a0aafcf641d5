// freePort, the one way tests, benches and scripts pick a loopback port for
// a server they are about to start: the port is free for TCP and UDP, and
// lies outside the kernel's ephemeral range, from which every outgoing
// connection takes its local port (so none can take it before the server
// listens).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import dgram from 'node:dgram'
import fs from 'node:fs'
import net from 'node:net'
import { freePort } from '../dev/free-port.js'

test('a free port is free for TCP and UDP, and no outgoing connection can be given it', async () => {
  const [first, last] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
  const ports = []
  for (let i = 0; i < 20; i++) ports.push(await freePort())
  for (const port of ports) assert.ok(port < first || port > last, `${port} is outside the ephemeral range ${first}–${last}`)
  assert.ok(new Set(ports).size > 1, 'drawn, not one fixed port')

  const port = ports[0]
  const server = net.createServer()
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(port, '127.0.0.1', () => resolve(undefined)) })
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve, reject) => { socket.once('error', reject); socket.bind(port, '127.0.0.1', () => resolve(undefined)) })
  await new Promise((resolve) => socket.close(() => resolve(undefined)))
  await new Promise((resolve) => server.close(resolve))
})
