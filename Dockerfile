# context-compiler — production image.
#   DOCKER_BUILDKIT=0 docker build --network host -t context-compiler .   (see docs/operations.md)
# Runs as `node`, works with a read-only root filesystem, and refuses to start without a
# token because HOST is 0.0.0.0. With traces in PostgreSQL (TRACE_DATABASE_URL) it writes
# nothing; with trace files, mount a volume at TRACE_DIR — where the files backend is chosen
# (docker/compose.files.yaml, docker/k8s/shared-volume, `docker run -v`), not here.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --workspaces=false: the client package (packages/client, published on its own) is not
# installed here; the build compiles its source through src/client.ts like any other file.
RUN npm ci --workspaces=false --no-audit --no-fund
# Everything `npm run build` may need (sources, build scripts, assets); .dockerignore keeps
# out dependencies, output, tests and secrets. Only dist/ leaves this stage.
COPY . .
RUN npm run build

FROM node:24-slim AS runtime
WORKDIR /app
# The V8 heap caps and one malloc arena keep peak RSS under the 200 MB target
# (docs/operations.md, "Memory"); npm start sets the same.
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-old-space-size=112 --max-semi-space-size=8" \
    MALLOC_ARENA_MAX=1 \
    HOST=0.0.0.0 \
    PORT=8080 \
    TRACE_DIR=/var/lib/context-compiler/traces
COPY package.json package-lock.json ./
# --ignore-scripts: no install script runs as part of the runtime image; the cache goes so
# the image holds nothing npm would want to write to later. --workspaces=false: the service
# runs none of the workspaces (the client package ships separately), so none is linked.
RUN npm ci --omit=dev --workspaces=false --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY examples/brain ./examples/brain
COPY docker/healthcheck.mjs ./docker/healthcheck.mjs
# The application files stay root-owned (read-only to the service); only the trace
# directory belongs to `node`, and a fresh named volume mounted on it inherits that ownership.
RUN mkdir -p /var/lib/context-compiler/traces \
    && chown -R node:node /var/lib/context-compiler \
    && chmod 0700 /var/lib/context-compiler/traces
USER node
EXPOSE 8080
# The legacy builder (no BuildKit here) rejects --start-interval, so the first probe runs
# one interval after start.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
    CMD ["node", "docker/healthcheck.mjs"]
# Open files: every socket takes a descriptor. MAX_CONNECTIONS (768 by default) plus ~128 for
# node, brain reads and trace files must fit under the container's limit (`docker run --ulimit
# nofile=4096:4096`, compose `ulimits`); an image cannot set it. The service warns at start if
# it does not fit (docs/operations.md, "Connections and file descriptors").
# node directly, not npm: npm does not forward SIGTERM, so graceful shutdown needs node as PID 1.
CMD ["node", "dist/src/server.js"]
