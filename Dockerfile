# h3lens image: Node 20 on Debian bookworm with Debian's Chromium, Firefox ESR
# and Caddy: the Debian packages setup installs (scripts/debian-packages.js).
FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium firefox-esr libnss3-tools caddy openssl gcc libc6-dev iproute2 fonts-liberation ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
RUN cc -O2 -Wall -o lab/linkem/linkem lab/linkem/linkem.c -lm
ENV NODE_ENV=production
CMD ["node", "bin/h3lens.js", "start"]
