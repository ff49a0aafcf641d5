// Runs in the page. The document's declarative refresh, as the HTML
// standard reads a <meta http-equiv="refresh"> (the first one that parses
// sets it): its delay in seconds and the absolute URL it goes to (the
// document's own when it names none); null when the page has none.
export function metaRefresh () {
  for (const meta of document.querySelectorAll('meta[http-equiv]')) {
    if (meta.getAttribute('http-equiv')?.trim().toLowerCase() !== 'refresh') continue
    const content = meta.getAttribute('content') ?? ''
    const time = /^[\t\n\f\r ]*(\d*)(\.[\d.]*)?/.exec(content)
    if (!time || (time[1] === '' && !time[2])) continue
    let rest = content.slice(time[0].length)
    if (rest !== '' && !/^[;,\t\n\f\r ]/.test(rest)) continue
    rest = rest.replace(/^[\t\n\f\r ]*[;,]?[\t\n\f\r ]*/, '')
    const named = /^url[\t\n\f\r ]*=[\t\n\f\r ]*/i.exec(rest)
    if (named) rest = rest.slice(named[0].length)
    const quote = rest[0] === '"' || rest[0] === "'" ? rest[0] : null
    if (quote) rest = rest.slice(1).split(quote)[0]
    let url = document.URL
    try {
      if (rest !== '') url = new URL(rest, document.baseURI).href
    } catch {
      continue
    }
    return { delay_s: Number(time[1] || 0), url }
  }
  return null
}
