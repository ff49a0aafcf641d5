// The Debian packages h3lens runs on: what setup installs (scripts/setup.js)
// and what the Docker image installs (Dockerfile; test/docker-compose.test.js
// checks that it has every one).

/** Each command h3lens runs, and the Debian package that provides it. */
export const NEEDS = Object.freeze([
  { command: 'chromium', pkg: 'chromium', why: 'the browser that measures pages' },
  { command: 'firefox-esr', pkg: 'firefox-esr', why: 'the second browser, with an HTTP/3 stack of its own (docs/BROWSERS.md)' },
  { command: 'certutil', pkg: 'libnss3-tools', why: 'trusting the lab\'s certificate authority in a Firefox run\'s profile' },
  { command: 'caddy', pkg: 'caddy', why: 'the HTTP/3 lab origin' },
  { command: 'openssl', pkg: 'openssl', why: 'the lab certificate' },
  { command: 'cc', pkg: 'gcc', why: 'compiling the lab link emulator' },
  { command: 'ip', pkg: 'iproute2', why: 'lab network namespaces' }
])
/** Installed with them: the C library's headers for the link emulator, fonts pages render with, and the public roots. */
export const EXTRA_PACKAGES = Object.freeze(['libc6-dev', 'fonts-liberation', 'ca-certificates'])
