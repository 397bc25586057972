#!/bin/sh
# Installs c2c-agent on a camera (a Pi with systemd and Node.js >= 20): the
# files in packaging/files.list (bundle and profiles under /opt/c2c-agent,
# the unit, the sysusers file, the c2c-agent command, a default config that
# never replaces the administrator's), the c2c-agent user and its state dir,
# the unit's encrypted token-key (made once, never replaced); then enables
# the service and starts it once the config names the service
# (restarts it when it already runs: an upgrade). Running it again gives the
# same result.
#
#   npm run build && sudo sh scripts/install.sh
#   sudo sh scripts/install.sh --uninstall           # keeps credentials, queue, config, token-key
#   sudo sh scripts/install.sh --uninstall --purge   # removes them too
#   DESTDIR=/tmp/stage sh scripts/install.sh [--uninstall]   # files only: no user, no systemctl
set -eu

usage="usage: install.sh [--uninstall [--purge]]   (env: DESTDIR, C2C_DIST_DIR)"
here=$(cd "$(dirname "$0")/.." && pwd)
dist=${C2C_DIST_DIR:-$here/dist}
dest=${DESTDIR:-}
unitdir=/etc/systemd/system
bindir=/usr/local/bin
action=install
purge=no
for arg in "$@"; do
  case $arg in
    --uninstall) action=uninstall ;;
    --purge) purge=yes ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "install.sh: unknown option '$arg'; $usage" >&2; exit 64 ;;
  esac
done
if [ "$purge" = yes ] && [ "$action" != uninstall ]; then
  echo "install.sh: --purge goes with --uninstall; $usage" >&2
  exit 64
fi

. "$here/packaging/lifecycle.sh"

# Prints "kind mode source destination" per entry, placeholders filled in.
manifest() {
  grep -Ev '^[[:space:]]*(#|$)' "$here/packaging/files.list" |
    sed -e "s|@unitdir@|$unitdir|" -e "s|@bindir@|$bindir|"
}

source_path() { # repo-relative source -> path here
  case $1 in
    dist/*) echo "$dist/${1#dist/}" ;;
    *) echo "$here/$1" ;;
  esac
}

# Copy under a temporary name and rename, so a daemon restarting mid-install
# never loads a half-written file.
put() { # mode source target
  install -d -m 0755 "$(dirname "$3")"
  install -m "$1" "$2" "$3.c2c-new"
  mv -f "$3.c2c-new" "$3"
}

install_files() {
  manifest | while read -r kind mode src target; do
    target=$dest$target
    from=$(source_path "$src")
    # Only the last part may be a pattern (unquoted, so it expands).
    for f in "$(dirname "$from")"/$(basename "$from"); do
      if [ ! -f "$f" ]; then
        echo "install.sh: $f is missing; run 'npm run build' first" >&2
        exit 66
      fi
      case $target in */) to=$target$(basename "$f") ;; *) to=$target ;; esac
      if [ "$kind" = config ] && [ -e "$to" ]; then continue; fi
      put "$mode" "$f" "$to"
    done
  done
}

remove_files() {
  manifest | while read -r kind _mode src target; do
    if [ "$kind" = config ] && [ "$purge" = no ]; then continue; fi
    case $target in
      */) for f in "$dest$target"$(basename "$src"); do rm -f "$f"; done ;;
      *) rm -f "$dest$target" ;;
    esac
  done
  # The folders only c2c-agent uses, once empty (anything the administrator
  # added stays, and so do they).
  for d in /opt/c2c-agent/dist /opt/c2c-agent/firmware-profiles /opt/c2c-agent; do
    rmdir "$dest$d" 2>/dev/null || true
  done
}

if [ "$action" = install ]; then
  install_files
  [ -n "$dest" ] && exit 0
  c2c_create_user_and_dirs
  c2c_setup_credentials
  systemctl daemon-reload
  systemctl enable --quiet "$C2C_UNIT"
  if systemctl --quiet is-active "$C2C_UNIT"; then
    systemctl restart "$C2C_UNIT"
    echo "c2c-agent: installed, restarted"
  elif c2c_api_url_configured; then
    systemctl start "$C2C_UNIT"
    echo "c2c-agent: installed, started; 'systemctl status c2c-agent' shows its state"
  else
    c2c_next_steps
  fi
else
  if [ -z "$dest" ] && [ -f "$unitdir/$C2C_UNIT" ]; then
    systemctl disable --now --quiet "$C2C_UNIT"
  fi
  remove_files
  [ -n "$dest" ] && exit 0
  systemctl daemon-reload
  systemctl reset-failed "$C2C_UNIT" 2>/dev/null || true
  if [ "$purge" = yes ]; then
    c2c_purge_data
    echo "c2c-agent: removed with its credentials, queue and config (the $C2C_USER user stays)"
  else
    echo "c2c-agent: removed; kept $C2C_STATE_DIR (credentials, queue), $C2C_CONFIG_DIR and the unit's keys in $C2C_CREDSTORE: --purge removes them"
  fi
fi
