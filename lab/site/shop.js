// The lab's small shop, for journeys (docs/JOURNEYS.md): a login form, a
// page behind it, and a search, served over HTTP/1.1, HTTP/2 and HTTP/3 by
// the lab origin like every lab page. The form and its stylesheet and image
// are files (lab/site/build.js writes them); logging in, the account page and
// the search answer from the lab's backend (lab/site/upload-sink.js), since
// they depend on the request.
//
//   /shop/login.html   the login form (#user, #password, #login)
//   POST /shop/login   right user and password: 303 to /shop/account with a
//                      session cookie; wrong: the form again, saying so
//   /shop/account      "Account" and a search form (#q, #search), for a
//                      signed-in visitor; anyone else is sent to the form
//   /shop/search?q=    the products whose name contains q (#results)
//   /shop/hop.html?n=  a page that sends itself on by script n times, as a
//                      sign-in redirect in script does, then says "Arrived"
//                      (#hops)
import { randomBytes } from 'node:crypto'
import { gradientPng } from './png.js'

/** The lab shop's one account. A test account of a lab: not a secret of anyone's. */
export const LAB_SHOP_ACCOUNT = Object.freeze({ user: 'lab', password: 'lab-shop-password' })

const PRODUCTS = ['QUIC stream tester', 'Handshake timer', 'Congestion window', 'Packet pacer', 'Header compressor',
  'Datagram sender', 'Connection migrator', 'Priority scheduler', 'Alt-Svc announcer', 'Zero-RTT ticket']
const COOKIE = 'h3lens_shop'
// A session lasts as long as the lab origin runs.
const SESSION = randomBytes(16).toString('hex')

/**
 * @param {{ title: string, body: string }} parts
 */
function shopPage ({ title, body }) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · h3lens lab shop</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/shop/shop.css">
</head>
<body>
<header><img src="/shop/logo.png" width="48" height="48" alt=""> h3lens lab shop</header>
<h1>${title}</h1>
${body}</body>
</html>
`
}

const loginForm = (/** @type {string} */ note) => `${note}<form method="post" action="/shop/login">
<label>User <input id="user" name="user" autocomplete="username"></label>
<label>Password <input id="password" name="password" type="password" autocomplete="current-password"></label>
<button id="login" type="submit">Log in</button>
</form>
`

const HOPS = `<p id="hops">…</p>
<script>
const n = Number(new URLSearchParams(location.search).get('n')) || 0
if (n > 0) setTimeout(() => location.replace('?n=' + (n - 1)), 10)
else document.querySelector('#hops').textContent = 'Arrived'
</script>
`

/**
 * The shop's files, by URL path.
 * @returns {Record<string, Buffer>}
 */
export function shopFiles () {
  return {
    '/shop/login.html': Buffer.from(shopPage({ title: 'Log in', body: loginForm('') })),
    '/shop/hop.html': Buffer.from(shopPage({ title: 'On the way', body: HOPS })),
    '/shop/shop.css': Buffer.from('body{font:16px/1.5 sans-serif;margin:2rem auto;max-width:40rem;color:#222}' +
      'header{display:flex;gap:.5rem;align-items:center;font-weight:bold}label{display:block;margin:.5rem 0}' +
      'input{margin-left:.5rem}#results li{margin:.25rem 0}\n'),
    '/shop/logo.png': gradientPng({ width: 48, height: 48, hue: 0.6 })
  }
}

/** The paths the backend answers (the rest of /shop/ are files). */
export const SHOP_BACKEND_PATHS = Object.freeze(['/shop/login', '/shop/account', '/shop/search'])

/**
 * Answer a request for one of SHOP_BACKEND_PATHS.
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 */
export function shop (req, res) {
  const url = new URL(req.url ?? '/', 'https://lab')
  const signedIn = (req.headers.cookie ?? '').split(/;\s*/).includes(`${COOKIE}=${SESSION}`)
  const html = (/** @type {number} */ status, /** @type {string} */ body, /** @type {Record<string, string>} */ headers = {}) =>
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers }).end(body)
  const toLogin = () => res.writeHead(303, { location: '/shop/login.html', 'cache-control': 'no-store' }).end()

  if (url.pathname === '/shop/login') {
    if (req.method !== 'POST') return toLogin()
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk) => { if (body.length < 10_000) body += chunk })
    req.on('end', () => {
      const form = new URLSearchParams(body)
      if (form.get('user') === LAB_SHOP_ACCOUNT.user && form.get('password') === LAB_SHOP_ACCOUNT.password) {
        res.writeHead(303, { location: '/shop/account', 'set-cookie': `${COOKIE}=${SESSION}; Path=/shop; Secure; HttpOnly; SameSite=Lax`, 'cache-control': 'no-store' }).end()
        return
      }
      html(200, shopPage({ title: 'Log in', body: loginForm('<p id="error">Wrong user or password.</p>\n') }))
    })
    return
  }
  if (!signedIn) return toLogin()
  const searchForm = (/** @type {string} */ q) => `<form method="get" action="/shop/search">
<label>Search <input id="q" name="q" value="${escapeHtml(q)}"></label>
<button id="search" type="submit">Search</button>
</form>
`
  if (url.pathname === '/shop/account') {
    return html(200, shopPage({ title: 'Account', body: `<p id="who">Signed in as ${LAB_SHOP_ACCOUNT.user}.</p>\n${searchForm('')}` }))
  }
  const q = url.searchParams.get('q') ?? ''
  const found = PRODUCTS.filter((p) => p.toLowerCase().includes(q.toLowerCase()))
  const list = found.length ? `<ul id="results">${found.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}</ul>` : '<p id="results">Nothing found.</p>'
  return html(200, shopPage({ title: 'Search', body: `${searchForm(q)}<p id="count">${found.length} found</p>\n${list}\n` }))
}

/** @param {string} s */
function escapeHtml (s) {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
