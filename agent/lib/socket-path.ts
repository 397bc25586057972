// A unix socket's address, the one home of its limit: sockaddr_un's sun_path
// holds 108 bytes, the last a NUL for a path (an abstract name's leading NUL
// counts among the 107 left). libuv cuts a longer one short without a word
// and binds or connects *there*: a socket somewhere else, with other
// permissions around it, someone else's perhaps. And how the daemon listens
// on one (listenUnix). For the local API's server and client
// (agent/localapi/) and the state dir's lock (daemon/state-lock.ts).

import type { Server } from 'node:net';

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

/**
 * `server.listen(name, onListening)` for a unix socket (a path or an abstract
 * name), without node:cluster. Node's `Server.listen()` loads node:cluster,
 * and node:child_process and node:dgram with it, at a process's first listen,
 * only to ask whether the process is a cluster worker; under the unit's V8
 * flags node compiles them from source, 3.4 to 5.9 ms of the daemon's start
 * (docs/benchmarks.md). The daemon is never a cluster worker, so this calls
 * what `listen()` calls for a process that is not: the server's `_listen2`,
 * which node's lib/net.js keeps as a "legacy alias" for code that wraps it
 * (the same in node 20, 22 and 24; test/lib/socket-path.test.ts holds it to
 * that). The bind happens before this returns, as in `listen()`, and a
 * failure is the same 'error' event on the next tick. What differs: in a
 * cluster worker it binds the socket itself rather than asking the primary
 * for it (for a lock, what is wanted; node hides NODE_UNIQUE_ID from a
 * worker's code, so there is no cheap way to tell), and diagnostics_channel
 * subscribers see `net.server.listen`'s end without its start (nothing here
 * subscribes). A node without `_listen2` gets `listen()`.
 */
export function listenUnix(server: Server, name: string, onListening: () => void): void {
  const s = server as Server & ListenInternals;
  if (typeof s._listen2 !== 'function' || server.listening) {
    server.listen(name, onListening);
    return;
  }
  // What listen() sets for a path, so that address() gives it.
  s._pipeName = name;
  server.once('listening', onListening);
  // (address, port, addressType, backlog, fd, flags): port and addressType -1 make it a pipe; node's backlog (511).
  s._listen2(name, -1, -1, undefined, undefined, undefined);
}

interface ListenInternals {
  _pipeName?: string;
  _listen2?: (address: string, port: number, addressType: number, backlog: undefined, fd: undefined, flags: undefined) => void;
}
