// What the service transport and the storage client do with their sockets
// beyond what node's Agent does: TCP keepalive on a socket while a request
// waits on it (the Agent only turns keepalive on once a socket is idle in its
// pool), the pool emptied after a network failure, and the sockets on an
// address the unit no longer has closed.
import type http from 'node:http';
import { TCP_KEEPALIVE_IDLE_MS } from '../lib/timing.js';

/**
 * Keepalive probes on the request's socket, fresh or reused: a request whose
 * path died without a FIN or RST (the camera moved to another network, a NAT
 * forgot the flow) fails once the probes go unanswered rather than when its
 * timeout ends.
 */
export function probeWhileWaiting(req: http.ClientRequest): void {
  req.once('socket', (socket) => socket.setKeepAlive(true, TCP_KEEPALIVE_IDLE_MS));
}

/**
 * Closes every idle pooled socket. After a network failure the others to the
 * same host most likely went the same way (an address change kills them
 * all): the next request opens a fresh connection instead of trying a dead
 * one and waiting out its timeout. Requests in flight keep their sockets.
 */
export function dropIdleSockets(agents: Iterable<http.Agent>): number {
  let dropped = 0;
  for (const agent of agents) {
    for (const list of Object.values(agent.freeSockets)) {
      for (const socket of list ?? []) {
        socket.destroy();
        dropped++;
      }
    }
  }
  return dropped;
}

/** "::ffff:10.0.0.2" is 10.0.0.2 to os.networkInterfaces(). */
const plain = (address: string | undefined): string | undefined => address?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');

/**
 * Closes every socket, in use or idle, whose local address is one of `gone`
 * (see network/address-watch.ts): the request on it fails now with a network
 * error and is retried from an address the unit has.
 */
export function dropSocketsOn(agents: Iterable<http.Agent>, gone: ReadonlySet<string>): number {
  let dropped = 0;
  for (const agent of agents) {
    for (const pool of [agent.sockets, agent.freeSockets]) {
      for (const list of Object.values(pool)) {
        for (const socket of [...(list ?? [])]) {
          const local = plain(socket.localAddress);
          if (local === undefined || !gone.has(local) || socket.destroyed) continue;
          socket.destroy();
          dropped++;
        }
      }
    }
  }
  return dropped;
}
