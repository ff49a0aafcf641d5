#!/bin/sh
# Chromium inside the lab network namespace named by H3LENS_NETNS, so a
# browser measures through that namespace's emulated link.
# Every step execs: the process the driver spawned becomes Chromium itself,
# keeping its pid (for shutdown) and its pipe descriptors 3 and 4 (the
# DevTools pipe).
set -eu
: "${H3LENS_NETNS:?H3LENS_NETNS must name a network namespace}"
exec ip netns exec "$H3LENS_NETNS" "${H3LENS_CHROMIUM:-/usr/bin/chromium}" "$@"
