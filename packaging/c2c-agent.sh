#!/bin/sh
# The c2c-agent command: the bundle under /opt/c2c-agent, run by node.
exec node /opt/c2c-agent/dist/c2c-agent.mjs "$@"
