#!/bin/sh
# Installs c2c-agent on a camera: the bundle and firmware profiles under
# /opt/c2c-agent, the unit, the system user, and /etc/c2c-agent.
# Idempotent: running it again upgrades in place.
#
#   npm run build && sudo sh scripts/install.sh
#   DESTDIR=/tmp/stage sh scripts/install.sh   # stage only: no user, no daemon-reload
#
# It does not enable or start the service: pair first (see README).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
dist=${C2C_DIST_DIR:-$here/dist}
dest=${DESTDIR:-}
prefix=$dest/opt/c2c-agent

if [ ! -f "$dist/c2c-agent.mjs" ]; then
  echo "install.sh: $dist/c2c-agent.mjs is missing; run 'npm run build' first" >&2
  exit 66
fi

install -d -m 0755 "$prefix/dist" "$prefix/firmware-profiles" \
  "$dest/etc/systemd/system" "$dest/usr/lib/sysusers.d" "$dest/etc/c2c-agent"
# Copy to a temporary name and rename, so a running daemon that restarts
# mid-install never loads a half-written bundle.
install -m 0644 "$dist/c2c-agent.mjs" "$prefix/dist/.c2c-agent.mjs.new"
mv -f "$prefix/dist/.c2c-agent.mjs.new" "$prefix/dist/c2c-agent.mjs"
# The bundle embeds the shipped profiles; these copies are the reference an
# integrator edits and points --profiles-dir at.
for f in "$here"/firmware-profiles/*.json; do
  install -m 0644 "$f" "$prefix/firmware-profiles/"
done
install -m 0644 "$here/systemd/c2c-agent.service" "$dest/etc/systemd/system/c2c-agent.service"
install -m 0644 "$here/systemd/c2c-agent.sysusers.conf" "$dest/usr/lib/sysusers.d/c2c-agent.conf"

if [ -z "$dest" ]; then
  systemd-sysusers /usr/lib/sysusers.d/c2c-agent.conf
  systemctl daemon-reload
  echo "installed; next: put apiUrl in /etc/c2c-agent/config.json, pair with" \
    "'sudo -u c2c-agent node /opt/c2c-agent/dist/c2c-agent.mjs pair'," \
    "then 'systemctl enable --now c2c-agent'"
fi
