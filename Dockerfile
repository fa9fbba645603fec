# The server's image: `docker build -t platform-management-api:0.1.0 .`
#
# A first look, without any cluster (embedded etcd, data in a volume, admin kubeconfig written there):
#   docker run -d --name pmapi --read-only -p 8443:8443 -v pmapi-data:/var/lib/platform platform-management-api:0.1.0
#   docker cp pmapi:/var/lib/platform/admin.kubeconfig . && kubectl --kubeconfig admin.kubeconfig get sharedsecrets -A
# In a cluster the Helm chart (deploy/chart) runs it with --etcd-servers and its own certificates.

# Build: compile with every dependency, then keep only the production ones, without source maps and type files.
# The Node.js version is the project's pin (package.json devDependencies.node); the runtime below takes its binary.
FROM node:24.20.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/copy-assets.mjs ./scripts/
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund --ignore-scripts \
 && find node_modules dist \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -type f -delete \
 && mkdir -p var-lib-platform

# etcd for the embedded default, from Debian (a Go binary that needs only glibc, which the runtime image has).
FROM debian:bookworm-slim AS etcd
RUN apt-get update && apt-get install -y --no-install-recommends etcd-server && rm -rf /var/lib/apt/lists/*

# Runtime: Node.js and nothing else (no shell, no package manager), as a non-root user (65532). The root
# filesystem may be read-only: the server writes only under --data-dir (/var/lib/platform, a volume).
FROM gcr.io/distroless/nodejs24-debian12:nonroot
WORKDIR /app
# The exact Node.js the project is tested on, not whichever 24.x the base carries today (24.21.0 loses a client's
# intermediate certificates on the server side, nodejs/node#65579, which a front proxy's certificate may need).
COPY --from=build /usr/local/bin/node /nodejs/bin/node
COPY --from=etcd /usr/bin/etcd /usr/local/bin/etcd
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY crds ./crds
COPY --from=build --chown=65532:65532 /app/var-lib-platform /var/lib/platform
ENV NODE_ENV=production PATH=/usr/local/bin:/usr/bin:/bin
USER 65532:65532
EXPOSE 8443
VOLUME ["/var/lib/platform"]
ENTRYPOINT ["/nodejs/bin/node", "dist/main.js"]
CMD ["--data-dir=/var/lib/platform"]
