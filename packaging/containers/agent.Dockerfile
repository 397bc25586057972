# c2c-agent in a container: the bundle and profiles at the paths a camera
# has them (packaging/files.list), run by node as the c2c-agent user.
# Build from the repository root after `npm run build`:
#   docker build -f packaging/containers/agent.Dockerfile -t c2c-agent .
# BASE: any Debian-based image with Node.js >= 20 as `node` on PATH.
ARG BASE=node:22-bookworm-slim
FROM ${BASE}

COPY dist/c2c-agent.mjs /opt/c2c-agent/dist/c2c-agent.mjs
COPY dist/c2c-agentd.cjs /opt/c2c-agent/dist/c2c-agentd.cjs
COPY dist/c2c-agentd-main.cjs /opt/c2c-agent/dist/c2c-agentd-main.cjs
COPY firmware-profiles/ /opt/c2c-agent/firmware-profiles/
COPY packaging/c2c-agent.sh /usr/local/bin/c2c-agent
COPY packaging/config.json /etc/c2c-agent/config.json

# The state dir is the volume that keeps credentials and the queue. The
# runtime dir stays in the container's own layer: it must outlive a
# container restart (the last heartbeat time it holds keeps the 60 s rule).
RUN groupadd --system c2c-agent \
 && useradd --system --gid c2c-agent --home-dir /var/lib/c2c-agent --no-create-home --shell /usr/sbin/nologin c2c-agent \
 && install -d -m 0700 -o c2c-agent -g c2c-agent /var/lib/c2c-agent \
 && install -d -m 0750 -o c2c-agent -g c2c-agent /run/c2c-agent \
 && chmod 0755 /usr/local/bin/c2c-agent \
 && chmod -R a+rX /opt/c2c-agent /etc/c2c-agent

USER c2c-agent
WORKDIR /var/lib/c2c-agent
ENV C2C_STATE_DIR=/var/lib/c2c-agent \
    C2C_RUNTIME_DIR=/run/c2c-agent
VOLUME ["/var/lib/c2c-agent"]
# The daemon logs JSON lines on stdout and stops cleanly on SIGTERM
# (docker stop) within 5 s.
ENTRYPOINT ["node", "/opt/c2c-agent/dist/c2c-agent.mjs"]
CMD ["run"]
