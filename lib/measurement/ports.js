// The ports browsers refuse to load, the Fetch standard's "bad port" list
// (https://fetch.spec.whatwg.org/#port-blocking): Chromium fails such a
// load with net::ERR_UNSAFE_PORT and Firefox with "This address is
// restricted". A monitor, probe or journey URL on one could never load, and
// every run of it would be stored as a failure.
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111,
  113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548,
  554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566,
  6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080
])

/**
 * Why browsers will not load this URL's port, or null when they will.
 * @param {URL} url
 */
export function badPortReason (url) {
  if (url.port === '' || !BAD_PORTS.has(Number(url.port))) return null
  return `port ${url.port} is one browsers refuse to load (net::ERR_UNSAFE_PORT); use another port`
}
