# syntax=docker/dockerfile:1
# service-api-keys as a container: `serve` on 0.0.0.0:3001, keys in the /data volume.
# tests/system/container-install.test.ts reproduces what this image does without a Docker daemon.
ARG NODE_VERSION=22

# Build: dev dependencies, `npm pack` (its prepack script builds dist/), one tarball out.
FROM node:${NODE_VERSION}-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /tmp && mv /tmp/service-api-keys-*.tgz /tmp/package.tgz

# Runtime: the same Node (the build's V8 code cache matches it), the tarball's runtime dependencies only.
FROM node:${NODE_VERSION}-slim
COPY --from=build /tmp/package.tgz /tmp/package.tgz
RUN npm install --global --omit=dev --no-audit --no-fund /tmp/package.tgz \
 && rm -rf /tmp/package.tgz /root/.npm \
 && mkdir -p /data/keys && chown -R node:node /data && chmod 0700 /data/keys
# Nothing is written outside the store: run it with `--read-only`. HOME points nowhere writable.
ENV NODE_ENV=production \
    HOME=/nonexistent \
    SERVICE_API_STORE=/data/keys \
    HOST=0.0.0.0 \
    PORT=3001
USER node
VOLUME ["/data"]
EXPOSE 3001
# slim has no curl: Node's own fetch asks /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:3001/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["service-api", "serve", "--host", "0.0.0.0"]
