# The fake cloud (the service's device API with faults and a referee) in a
# container. It listens on the container's loopback only: agents join its
# network namespace (compose: network_mode: service:fake-cloud), as the agent
# accepts plain http:// only to a loopback address (--plain-http: the fake's
# default is HTTPS with a throwaway CA, whose file other containers cannot read).
# Build from the repository root after `npm run build`:
#   docker build -f packaging/containers/fake-cloud.Dockerfile -t c2c-fake-cloud .
ARG BASE=node:22-bookworm-slim
FROM ${BASE}

COPY dist/fake-cloud.mjs /opt/fake-cloud/fake-cloud.mjs
RUN chmod -R a+rX /opt/fake-cloud
# nobody: the fake needs no privilege and writes nothing.
USER 65534:65534
ENTRYPOINT ["node", "/opt/fake-cloud/fake-cloud.mjs"]
CMD ["--plain-http", "--port", "8080", "--admin-port", "8081", "--devices", "3"]
