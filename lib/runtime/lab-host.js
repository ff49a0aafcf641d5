// The lab origin's host names. They resolve nowhere on its own: agents map
// them to the lab origin with Chromium's --host-resolver-rules, and only for
// lab runs. The second name is a second origin on the same server, for pages
// that redirect across origins.
export const LAB_HOSTNAME = 'lab.h3lens.test'
export const LAB_ALT_HOSTNAME = 'lab2.h3lens.test'
export const LAB_HOSTNAMES = Object.freeze([LAB_HOSTNAME, LAB_ALT_HOSTNAME])
