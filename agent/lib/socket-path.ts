// A unix socket's address, the one home of its limit: sockaddr_un's sun_path
// holds 108 bytes, the last a NUL for a path (an abstract name's leading NUL
// counts among the 107 left). libuv cuts a longer one short without a word
// and binds or connects *there*: a socket somewhere else, with other
// permissions around it, someone else's perhaps. For the local API's server
// and client (agent/localapi/) and the state dir's lock (daemon/state-lock.ts).

export const MAX_SOCKET_PATH_BYTES = 107;

/** Why `socketPath` cannot be a unix socket's path (too long, in bytes), or undefined when it fits. */
export function socketPathTooLong(socketPath: string): string | undefined {
  const n = Buffer.byteLength(socketPath);
  return n > MAX_SOCKET_PATH_BYTES ? `the socket path ${socketPath} is ${n} bytes, over the ${MAX_SOCKET_PATH_BYTES} a unix socket takes; use a shorter --runtime-dir` : undefined;
}

/** A socket name cut to the bytes the kernel takes, never inside a character: the name bound is the name asked for. */
export function fitSocketName(name: string): string {
  let bytes = 0;
  let out = '';
  for (const ch of name) {
    bytes += Buffer.byteLength(ch);
    if (bytes > MAX_SOCKET_PATH_BYTES) break;
    out += ch;
  }
  return out;
}
