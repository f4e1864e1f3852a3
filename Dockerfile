# One image for every platform process (account API, worker, internal services, the migrations job);
# the command picks one. Production code only: no stand-ins (sandbox/), no development scripts
# (scripts/), no tests.
FROM node:24-bookworm-slim AS base
# pg_dump for tenant backups (worker); tini as PID 1 so signals reach Node and it drains gracefully.
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-client tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production

FROM base AS deps
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# the workspace portal (web/): built with the dev dependencies (Vite, React), only web/dist is kept
FROM base AS web
COPY package.json package-lock.json ./
RUN npm ci --include=dev --no-audit --no-fund
COPY web ./web
RUN npx vite build --config web/vite.config.ts --logLevel warn

FROM base
COPY --from=deps /app/node_modules ./node_modules
COPY --from=web /app/web/dist ./web/dist
COPY package.json package-lock.json tsconfig.json ./
COPY lib ./lib
COPY domain ./domain
COPY migrations ./migrations
COPY api ./api
COPY worker ./worker
COPY workflows ./workflows
COPY activities ./activities
COPY services ./services
COPY cli ./cli
# tenant filestores and the backup store (volumes in docker-compose.yml), writable by the app user
RUN mkdir -p /var/lib/plana/filestore /var/lib/plana/backups && chown -R node:node /var/lib/plana
USER node
EXPOSE 3000
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--import", "tsx", "api/server.ts"]
