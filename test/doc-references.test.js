// Every file, section and design section that the repository's comments and
// docs name must exist, so that a reader who follows one lands somewhere.
// Checked, in the comments of code and in whole Markdown files:
//   - repository paths, backquoted (`lib/store/jobs.js`, `lib/store/`) or
//     bare with an extension or a trailing slash (docs/WPT.md, lab/linkem/);
//   - Markdown links to files and their #anchors (GitHub's heading ids);
//   - doc names (STATISTICS.md) and quoted sections of them
//     (docs/BENCHMARKS.md, "Agent throughput"; README, "Quick start");
//   - "DESIGN §N", which must be a numbered section of docs/DESIGN.md.
// Landed migrations never change (their checksums are verified), so a path
// they name that has since moved is accepted when docs/ARCHITECTURE.md's
// table "Files that moved" gives its new place.
// Pure: reads the tracked files, parses comments with TypeScript's parser.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

// The top-level folders a bare path must start with to be taken for a
// repository path (so that "api/v1" in prose or /etc/hosts are not).
const ROOTS = ['.ci', 'agents', 'api', 'bench', 'bin', 'dev', 'docs', 'lab', 'lib', 'migrations', 'scheduler', 'scripts', 'test', 'types', 'web']
const TEXT_EXTENSIONS = new Set(['.js', '.mjs', '.ts', '.md', '.sql', '.sh', '.c', '.h', '.css', '.html', '.py', '.yml', '.yaml', '.toml'])
const HASH_COMMENTS = new Set(['.sh', '.py', '.yml', '.yaml', '.toml', ''])
const MOVED_TABLE = 'Files that moved'

/** Tracked files, or every file outside the ignored folders when git is not there. */
function trackedFiles () {
  try {
    return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 }).split('\0').filter(Boolean)
  } catch {
    const out = []
    const walk = (dir) => {
      for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
        const rel = dir ? `${dir}/${e.name}` : e.name
        if (e.isDirectory()) { if (!['node_modules', '.git', '.h3lens'].includes(e.name)) walk(rel) } else out.push(rel)
      }
    }
    walk('')
    return out
  }
}

/** The text of every comment in a JavaScript or TypeScript file, in order. */
export function scriptComments (file, text) {
  const kind = file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind)
  const seen = new Set()
  const out = []
  const take = (ranges) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue
      seen.add(r.pos)
      out.push({ pos: r.pos, text: text.slice(r.pos, r.end) })
    }
  }
  // Every comment leads some node or follows one's end (before a closing
  // brace, or at the end of the file).
  const visit = (node) => {
    take(ts.getLeadingCommentRanges(text, node.pos))
    take(ts.getLeadingCommentRanges(text, node.end))
    take(ts.getTrailingCommentRanges(text, node.end))
    ts.forEachChild(node, visit)
  }
  visit(source)
  return out.sort((a, b) => a.pos - b.pos).map((c) => c.text).join('\n')
}

/** The commented text of a file: all of a Markdown file, the comments of anything else. */
export function commentedText (file, text) {
  const ext = path.extname(file)
  if (ext === '.md') return text
  if (['.js', '.mjs', '.ts'].includes(ext)) return scriptComments(file, text)
  if (ext === '.sql') return text.split('\n').map((l) => l.match(/--(.*)$/)?.[1] ?? '').join('\n')
  if (ext === '.html') return [...text.matchAll(/<!--([\s\S]*?)-->/g)].map((m) => m[1]).join('\n')
  if (['.c', '.h', '.css'].includes(ext)) {
    return [...text.matchAll(/\/\*([\s\S]*?)\*\/|(?<![:"'\\])\/\/(.*)$/gm)].map((m) => m[1] ?? m[2]).join('\n')
  }
  if (HASH_COMMENTS.has(ext)) return text.split('\n').map((l) => l.match(/(?:^|\s)#(.*)$/)?.[1] ?? '').join('\n')
  return ''
}

/** GitHub's id for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug (heading) {
  return heading.trim().toLowerCase()
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{M}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-')
}

/** Markdown text outside fenced code blocks. */
function prose (text) {
  return text.split(/^```.*$/m).filter((_, i) => i % 2 === 0).join('\n')
}

/** A Markdown file's headings: their text and their ids, as GitHub numbers repeated ones. */
export function headings (text) {
  const counts = new Map()
  const out = []
  for (const m of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1])
    const n = counts.get(base) ?? 0
    counts.set(base, n + 1)
    out.push({ text: m[1].replace(/`/g, ''), id: n ? `${base}-${n}` : base })
  }
  return out
}

const trim = (p) => p.replace(/[.,;:)]+$/, '').replace(/:\d+$/, '')
const placeholder = (p) => /[<>*{}$…]|\.\.\.|(^|[/_.-])N{2,}([/_.-]|$)/.test(p)

/**
 * Every reference in one file's commented text, each { kind, target, ... }.
 * @param {string} file
 * @param {string} text the file's commented text (commentedText)
 */
export function referencesIn (file, text) {
  const refs = []
  const isMarkdown = file.endsWith('.md')
  // A link's target is checked as a link, not again as a path or a doc name.
  const plain = isMarkdown ? text.replace(/\]\([^)\s]*(\s+"[^"]*")?\)/g, ']()') : text
  const rootsRe = ROOTS.map((r) => r.replace('.', '\\.')).join('|')
  // Backquoted repository paths.
  for (const m of plain.matchAll(/`([^`\s]+)`/g)) {
    const p = trim(m[1])
    if (placeholder(p) || !new RegExp(`^(${rootsRe})/`).test(p)) continue
    refs.push({ kind: 'path', target: p })
  }
  // Bare paths with an extension or a trailing slash.
  const bare = new RegExp(`(?<![\\w./@~$\`-])((?:${rootsRe})/[\\w.@/-]*[\\w/])`, 'g')
  for (const m of plain.replace(/`[^`\s]+`/g, '').matchAll(bare)) {
    const p = trim(m[1])
    if (placeholder(p) || !(/\.[a-z]{1,5}$/.test(p) || p.endsWith('/'))) continue
    refs.push({ kind: 'path', target: p })
  }
  const body = isMarkdown ? prose(text) : text
  // Markdown links, in docs only: [text](target) and ![alt](target).
  if (isMarkdown) {
    for (const m of body.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue // http:, https:, mailto:
      const [file_, anchor] = target.split('#')
      const resolved = file_ ? path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(file_))) : file
      refs.push({ kind: 'link', target: resolved.replace(/\/$/, ''), anchor: anchor ?? null, raw: target })
    }
  }
  // Doc names (STATISTICS.md) wherever they stand.
  for (const m of (isMarkdown ? prose(plain) : plain).matchAll(/(?<![\w/.-])((?:docs\/)?[A-Z][A-Z0-9_-]*\.md)\b/g)) {
    refs.push({ kind: 'doc', target: m[1] })
  }
  // Quoted sections: docs/BENCHMARKS.md, "Agent throughput"; README ("Quick start").
  for (const m of body.matchAll(/(?<![\w/.-])((?:docs\/)?[A-Z][A-Z0-9_-]*\.md|README)(?:'s)?,?\s*\(?\s*"([^"\n]{2,80})"/g)) {
    refs.push({ kind: 'section', target: m[1] === 'README' ? 'README.md' : m[1], section: m[2] })
  }
  // DESIGN §N, with or without its path.
  for (const m of body.matchAll(/\bDESIGN(?:\.md)?\s*§\s*(\d+)/g)) {
    refs.push({ kind: 'design', target: 'docs/DESIGN.md', section: m[1] })
  }
  return refs
}

/** The old → new paths of docs/ARCHITECTURE.md's "Files that moved" table. */
export function movedPaths (architecture) {
  const section = architecture.split(/^## /m).find((s) => s.startsWith(MOVED_TABLE)) ?? ''
  const moved = new Map()
  for (const m of section.matchAll(/^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`/gm)) moved.set(m[1], m[2])
  return moved
}

/**
 * Every reference of `files` that does not resolve, as "file: what".
 * @param {string[]} files repository-relative paths
 * @param {(file: string) => string} read
 */
export function brokenReferences (files, read) {
  const have = new Set(files)
  const dirs = new Set()
  for (const f of files) for (let d = path.posix.dirname(f); d !== '.'; d = path.posix.dirname(d)) dirs.add(d)
  const exists = (p) => have.has(p.replace(/\/$/, '')) || dirs.has(p.replace(/\/$/, ''))
  const headingCache = new Map()
  const headingsOf = (f) => {
    if (!headingCache.has(f)) headingCache.set(f, have.has(f) ? headings(read(f)) : [])
    return headingCache.get(f)
  }
  const docPath = (name, from) => [name, `docs/${name}`, path.posix.join(path.posix.dirname(from), name)].find((p) => have.has(p))
  const moved = have.has('docs/ARCHITECTURE.md') ? movedPaths(read('docs/ARCHITECTURE.md')) : new Map()
  const landed = (f) => /^migrations\/\d+_.*\.sql$/.test(f) || /^test\/fixtures\/\d+_.*\.sql$/.test(f)

  const problems = []
  for (const file of files) {
    if (!TEXT_EXTENSIONS.has(path.extname(file)) && !HASH_COMMENTS.has(path.extname(file))) continue
    if (file.startsWith('test/fixtures/') && !file.endsWith('.sql')) continue
    let text
    try { text = read(file) } catch { continue }
    if (text.includes('\0')) continue
    for (const ref of referencesIn(file, commentedText(file, text))) {
      if (ref.kind === 'path') {
        if (exists(ref.target)) continue
        // The old paths of the moves table, in that table and in landed migrations.
        const named = landed(file) || file === 'docs/ARCHITECTURE.md'
        if (named && moved.has(ref.target) && exists(moved.get(ref.target))) continue
        problems.push(`${file}: names ${ref.target}, which does not exist`)
      } else if (ref.kind === 'link') {
        if (!exists(ref.target)) { problems.push(`${file}: links to ${ref.raw}, which does not exist`); continue }
        if (ref.anchor && ref.target.endsWith('.md') && !headingsOf(ref.target).some((h) => h.id === ref.anchor)) {
          problems.push(`${file}: links to ${ref.raw}, but ${ref.target} has no heading with the id #${ref.anchor}`)
        }
      } else if (ref.kind === 'doc') {
        if (!docPath(ref.target, file)) problems.push(`${file}: names ${ref.target}, which is not in the repository`)
      } else if (ref.kind === 'section') {
        const doc = docPath(ref.target, file)
        if (!doc) { problems.push(`${file}: names ${ref.target}, which is not in the repository`); continue }
        const want = ref.section.toLowerCase().replace(/[.,:;]+$/, '')
        if (!headingsOf(doc).some((h) => h.text.toLowerCase().startsWith(want))) {
          problems.push(`${file}: names the section "${ref.section}" of ${doc}, which has no such heading`)
        }
      } else if (ref.kind === 'design') {
        if (!headingsOf(ref.target).some((h) => new RegExp(`^${ref.section}\\.\\s`).test(h.text))) {
          problems.push(`${file}: cites DESIGN §${ref.section}, but docs/DESIGN.md has no section ${ref.section}`)
        }
      }
    }
  }
  return [...new Set(problems)]
}

test('every path, link, anchor, doc section and DESIGN section the comments and docs name exists', () => {
  const problems = brokenReferences(trackedFiles(), (f) => fs.readFileSync(path.join(ROOT, f), 'utf8'))
  assert.deepEqual(problems, [], `broken references:\n${problems.join('\n')}`)
})

test('the check finds each kind of broken reference, and only those', () => {
  const files = {
    'README.md': '# h3lens\n\n## Quick start\n\nSee [the lab](docs/LAB.md#blocking-udp) and [gone](docs/GONE.md), ' +
      '[no such part](docs/LAB.md#no-such-part), [ok](#quick-start), [bad](#nowhere).\n',
    'docs/LAB.md': '# The lab\n\n## Blocking UDP\n\nSee docs/STATISTICS.md, "Calibration" and README, "Quick start"; ' +
      'also BENCHMARKS.md, "Load" and `lib/store/missing.js`.\n\n```sh\n# not a heading\n```\n',
    'docs/STATISTICS.md': '# Statistics\n\n## Calibration\n',
    'docs/DESIGN.md': '# Design\n\n## 3. Data model\n',
    'lib/store/jobs.js': '// Rounds (DESIGN §3, DESIGN §4): see lib/store/jobs.js and `lib/comparison.js`.\n' +
      "const s = 'lib/not-a-comment.js' // lib/analysis/\nexport default s\n",
    'lib/analysis/x.js': '/* `lib/measurement/` is not there */\n',
    'migrations/001_init.sql': '-- Core tables (lib/comparison.js, lib/results.js).\nSELECT 1; -- DESIGN §9\n',
    'docs/ARCHITECTURE.md': '# Architecture\n\n## Files that moved\n\n| named | now |\n|---|---|\n| `lib/comparison.js` | `lib/analysis/x.js` |\n'
  }
  const problems = brokenReferences(Object.keys(files), (f) => files[f])
  assert.deepEqual(problems.sort(), [
    'README.md: links to #nowhere, but README.md has no heading with the id #nowhere',
    'README.md: links to docs/GONE.md, which does not exist',
    'README.md: links to docs/LAB.md#no-such-part, but docs/LAB.md has no heading with the id #no-such-part',
    'docs/LAB.md: names BENCHMARKS.md, which is not in the repository',
    'docs/LAB.md: names lib/store/missing.js, which does not exist',
    'lib/analysis/x.js: names lib/measurement/, which does not exist',
    'lib/store/jobs.js: cites DESIGN §4, but docs/DESIGN.md has no section 4',
    'lib/store/jobs.js: names lib/comparison.js, which does not exist',
    'migrations/001_init.sql: cites DESIGN §9, but docs/DESIGN.md has no section 9',
    'migrations/001_init.sql: names lib/results.js, which does not exist'
  ].sort())
})

test('heading ids follow GitHub: punctuation dropped, spaces to hyphens, repeats numbered', () => {
  assert.deepEqual(headings('# A\n## Storage: plain table against TimescaleDB\n## 1. Why: what the field measured\n## Notes\n## Notes\n')
    .map((h) => h.id), ['a', 'storage-plain-table-against-timescaledb', '1-why-what-the-field-measured', 'notes', 'notes-1'])
  assert.equal(slug('Use your `WebPageTest` agents'), 'use-your-webpagetest-agents')
  assert.equal(slug('H3 share alert: false alarms and time to fire'), 'h3-share-alert-false-alarms-and-time-to-fire')
})
