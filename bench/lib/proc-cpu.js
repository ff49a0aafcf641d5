// CPU time of processes from /proc (Linux), for the benches' CPU figures.
// stat(5): after the command name, field 3 (state) is f[0]; utime, stime,
// cutime and cstime (fields 14–17) are f[11]…f[14], in clock ticks.
import fs from 'node:fs'
import { execFileSync } from 'node:child_process'

export const CLK_TCK = (() => {
  try { return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100 } catch { return 100 }
})()

/** @param {number | 'self' | undefined} pid @returns {string[] | null} the fields after the name; null when the process is gone (or has no pid) */
export function statFields (pid) {
  if (pid === undefined) return null
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    return null
  }
}

/**
 * CPU seconds of a process: its own (utime + stime), and with `children`
 * also what its reaped children used (cutime + cstime); 0 when it is gone.
 * @param {number | 'self' | undefined} pid
 * @param {{ children?: boolean }} [o]
 */
export function procCpuS (pid, { children = false } = {}) {
  const f = statFields(pid)
  if (!f) return 0
  return (Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0)) / CLK_TCK
}

/** CPU seconds of this process's children that have exited and been waited for, and of what they waited for. */
export function reapedChildrenCpuS () {
  return procCpuS('self', { children: true }) - procCpuS('self')
}

/**
 * Every live process: its CPU seconds (own and its reaped children's) and
 * its live children, read once.
 * @returns {{ cpuS: Map<number, number>, children: Map<number, number[]> }}
 */
export function processTable () {
  const cpuS = new Map()
  const children = new Map()
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const f = statFields(Number(name))
    if (!f) continue
    const pid = Number(name)
    const ppid = Number(f[1])
    cpuS.set(pid, (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK_TCK)
    if (!children.has(ppid)) children.set(ppid, [])
    children.get(ppid).push(pid)
  }
  return { cpuS, children }
}

/**
 * CPU seconds of a live process tree: each process's own time and that of
 * the children it has reaped, so a renderer that exited still counts (in
 * its parent's).
 * @param {number} root
 * @param {ReturnType<typeof processTable>} [table]
 */
export function treeCpuS (root, table = processTable()) {
  let total = 0
  const stack = [root]
  while (stack.length) {
    const pid = /** @type {number} */ (stack.pop())
    total += table.cpuS.get(pid) ?? 0
    stack.push(...(table.children.get(pid) ?? []))
  }
  return total
}
