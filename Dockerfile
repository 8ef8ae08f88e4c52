# One image for the control plane and the runners; docker-compose.yml picks the command.
# Two stages: dependencies are installed in the first (npm's cache stays there), the runtime takes
# node_modules and the source. It ships only what a container runs: no dev dependencies and no
# optional ones — the `node` package (the image's own Node 24 runs the code) and embedded-postgres
# (a container always has DATABASE_URL) are optionalDependencies for exactly this
# (test/image.test.ts checks the list).
FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund

FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY shared ./shared
COPY control-plane ./control-plane
COPY runner ./runner
COPY sandbox ./sandbox

USER node
EXPOSE 8080 8081
# The control plane's readiness (a runner's is on METRICS_PORT: docker-compose.yml sets its own).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Containers listen on every interface; publish the ops port to the host's loopback only.
ENV HOST=0.0.0.0 OPS_HOST=0.0.0.0
CMD ["node", "--no-node-snapshot", "control-plane/main.ts"]
