// A lab page with the real-user snippet installed as a site would install
// it (its one <script> tag), for checking beacons end to end in a real
// browser (test/rum-browser.test.js). It has what each metric needs: an
// image for LCP (the largest thing on the page), a button whose click handler works for ~80 ms for INP, a
// banner that opens once the loaded page is painted and pushes it down for CLS, and a
// same-origin stylesheet, which a second visit takes from the cache.

/**
 * @param {{ tag: string, image?: string }} o tag: the install tag (GET /api/v1/rum/sites/{id}, install.tag)
 * @returns {string}
 */
export function rumPage ({ tag, image = '/assets/page-100k-hero.png' }) {
  // The 100 KB page's hero image is 200 × 119.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>h3lens lab: real-user snippet</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/many/s00.css">
${tag}
</head>
<body>
<div id="banner"></div>
<p>h3lens lab: real-user snippet</p>
<img src="${image}" width="200" height="119" alt="" style="display:block">
<p>This page sends one beacon when it is hidden.</p>
<button id="work" type="button">Work for 80 ms</button>
<script>
// After a frame has shown the page as loaded (the second animation frame
// runs after that paint): a banner opened before the page was first
// painted, as on a busy machine, moves nothing anyone saw, and is no shift.
addEventListener('load', function () {
  requestAnimationFrame(function () {
    requestAnimationFrame(function () {
      setTimeout(function () { document.getElementById('banner').style.height = '120px' }, 50)
    })
  })
})
document.getElementById('work').addEventListener('click', function () {
  var until = performance.now() + 80
  while (performance.now() < until) {}
  this.textContent = 'Done'
})
</script>
</body>
</html>
`
}
