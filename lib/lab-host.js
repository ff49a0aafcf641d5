// The lab origin's host name. It resolves nowhere on its own: agents map it to
// the lab origin with Chromium's --host-resolver-rules, and only for lab runs.
export const LAB_HOSTNAME = 'lab.h3lens.test'
