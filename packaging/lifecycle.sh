# What installing and removing c2c-agent means beyond copying files: the
# user, its state dir, when to start the daemon, what a purge deletes.
# Sourced by scripts/install.sh; scripts/package-deb.mjs inlines it into the
# Debian maintainer scripts. POSIX sh, no systemctl calls of its own (the
# package must go through deb-systemd-helper and deb-systemd-invoke).

C2C_USER=c2c-agent
C2C_UNIT=c2c-agent.service
C2C_STATE_DIR=/var/lib/c2c-agent
C2C_RUNTIME_DIR=/run/c2c-agent
C2C_CACHE_DIR=/var/cache/c2c-agent
C2C_CONFIG_DIR=/etc/c2c-agent
C2C_CONFIG_FILE=$C2C_CONFIG_DIR/config.json
# The unit's encrypted credentials (its LoadCredentialEncrypted= lines):
# systemd's credential store, one file per secret, named for this unit.
C2C_CREDSTORE=/etc/credstore.encrypted
C2C_TOKEN_KEY_CRED=$C2C_CREDSTORE/c2c-agent.token-key
C2C_SECRET_CRED=$C2C_CREDSTORE/c2c-agent.client-secret
# Where docs/packaging.md once told the administrator to put the secret in clear.
C2C_PLAIN_SECRET=$C2C_CONFIG_DIR/client-secret

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
    "Set it, give the client secret (encrypted: 'systemd-creds encrypt" \
    "--name=client-secret - $C2C_SECRET_CRED', docs/packaging.md), then" \
    "'systemctl start c2c-agent' and 'sudo -u $C2C_USER c2c-agent pair'."
}

# Secrets at rest (docs/packaging.md): the token-key the credentials file is
# encrypted under, made once from 32 random bytes and encrypted by
# systemd-creds (bound to this machine's host key, and to its TPM2 where it
# has one); never replaced, since another key would leave the stored
# credentials unreadable. A client secret in clear at $C2C_PLAIN_SECRET is
# encrypted beside it once. Where systemd-creds is missing or fails, the
# install goes on and the tokens are stored in clear, as before.
c2c_encrypt_credential() { # name input output
  if (umask 077 && systemd-creds encrypt --name="$1" "$2" "$3.c2c-new") && mv -f "$3.c2c-new" "$3"; then
    return 0
  fi
  rm -f "$3.c2c-new"
  echo "c2c-agent: could not encrypt the $1 credential with systemd-creds; see docs/packaging.md, \"Secrets at rest\"" >&2
  return 1
}

c2c_setup_credentials() {
  if ! command -v systemd-creds >/dev/null 2>&1; then
    echo "c2c-agent: systemd-creds not found: the tokens are stored in clear (docs/packaging.md, \"Secrets at rest\")" >&2
    return 0
  fi
  install -d -m 0700 "$C2C_CREDSTORE"
  if [ ! -e "$C2C_TOKEN_KEY_CRED" ]; then
    head -c 32 /dev/urandom | c2c_encrypt_credential token-key - "$C2C_TOKEN_KEY_CRED" || true
  fi
  if [ -f "$C2C_PLAIN_SECRET" ] && [ ! -e "$C2C_SECRET_CRED" ] &&
    c2c_encrypt_credential client-secret "$C2C_PLAIN_SECRET" "$C2C_SECRET_CRED"; then
    echo "c2c-agent: encrypted $C2C_PLAIN_SECRET into $C2C_SECRET_CRED; the unit reads it" \
      "once clientSecretFile is gone from $C2C_CONFIG_FILE: remove that key, then" \
      "'shred -u $C2C_PLAIN_SECRET' and 'systemctl restart c2c-agent'"
  fi
}

# Credentials, client id, queued channel syncs and uploads (state dir), live
# status (runtime dir), the administrator's settings and secrets, and the
# unit's encrypted credentials (the credential store itself only if that
# leaves it empty: other services may keep theirs there). The
# system user stays: files it owns elsewhere (a media dir) must not end up
# owned by a recycled uid.
c2c_purge_data() {
  rm -rf "$C2C_STATE_DIR" "$C2C_RUNTIME_DIR" "$C2C_CACHE_DIR" "$C2C_CONFIG_DIR"
  rm -f "$C2C_TOKEN_KEY_CRED" "$C2C_SECRET_CRED"
  rmdir "$C2C_CREDSTORE" 2>/dev/null || true
}
