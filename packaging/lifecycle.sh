# What installing and removing c2c-agent means beyond copying files: the
# user, its state dir, when to start the daemon, what a purge deletes.
# Sourced by scripts/install.sh; scripts/package-deb.mjs inlines it into the
# Debian maintainer scripts. POSIX sh, no systemctl calls of its own (the
# package must go through deb-systemd-helper and deb-systemd-invoke).

C2C_USER=c2c-agent
C2C_UNIT=c2c-agent.service
C2C_STATE_DIR=/var/lib/c2c-agent
C2C_RUNTIME_DIR=/run/c2c-agent
C2C_CONFIG_DIR=/etc/c2c-agent
C2C_CONFIG_FILE=$C2C_CONFIG_DIR/config.json

# The user from the sysusers file, and the state dir it owns. The unit's
# StateDirectory= would create the dir at first start too, but `sudo -u
# c2c-agent c2c-agent pair` may come first and cannot create it in /var/lib.
c2c_create_user_and_dirs() {
  systemd-sysusers c2c-agent.conf
  install -d -m 0700 -o "$C2C_USER" -g "$C2C_USER" "$C2C_STATE_DIR"
}

# Whether the config file names the service. Without an API URL `run` exits
# 78 at once (a configuration error, which the unit does not restart), so
# starting would only leave a failed unit behind. Unpaired is fine: the
# daemon waits in needs-pairing, and `pair` hands it the credentials with
# SIGHUP, no restart needed.
c2c_api_url_configured() {
  [ -f "$C2C_CONFIG_FILE" ] || return 1
  node -e 'const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    process.exit(typeof c.apiUrl === "string" && c.apiUrl !== "" ? 0 : 1)' "$C2C_CONFIG_FILE" 2>/dev/null
}

c2c_next_steps() {
  echo "c2c-agent: enabled but not started: no apiUrl in $C2C_CONFIG_FILE yet." \
    "Set it (and clientSecretFile), then 'systemctl start c2c-agent' and" \
    "'sudo -u $C2C_USER c2c-agent pair'."
}

# Credentials, client id, queued channel syncs and uploads (state dir), live
# status (runtime dir), and the administrator's settings and secrets. The
# system user stays: files it owns elsewhere (a media dir) must not end up
# owned by a recycled uid.
c2c_purge_data() {
  rm -rf "$C2C_STATE_DIR" "$C2C_RUNTIME_DIR" "$C2C_CONFIG_DIR"
}
