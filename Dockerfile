# Dock Notify's container image: built with the devDependencies, run with Node.js 24, the built
# service and its two external dependencies only, as an unprivileged user.
#
#   docker build -t dock-notify .        (or: podman build / buildah build)
#   docker run -d -p 8080:8080 -v dock-notify:/data -e TELEGRAM_BOT_TOKEN=… -e PUBLIC_URL=… dock-notify
#
# Released images are built from this file unchanged (.github/workflows/release.yml).
# See docs/deployment.md (compose.yaml, configuration, the sandbox in a container).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
# A TLS-intercepting proxy's CA for npm, when the build machine needs one: a file mounted into the
# build (buildah/podman build --volume <ca>:/run/extra-ca.pem:ro --build-arg NODE_EXTRA_CA_CERTS=/run/extra-ca.pem).
ARG NODE_EXTRA_CA_CERTS
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && find dist -name '*.map' -delete

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data \
    NODE_OPTIONS=--max-semi-space-size=16 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /src/package.json /src/LICENSE /src/CHANGELOG.md ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/bin ./bin
COPY --from=build /src/dist ./dist
COPY --from=build /src/web/dist ./web/dist
# The `dock-notify` command: it starts as root only to give /data to `node` (a bind-mounted host
# folder is usually root's), then runs the service as `node` (deploy/container-entrypoint.sh).
COPY deploy/container-entrypoint.sh /usr/local/bin/dock-notify
RUN chmod 755 /usr/local/bin/dock-notify \
 && mkdir -p /data && chown node:node /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["dock-notify"]
CMD ["serve"]
