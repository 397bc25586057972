// What the service transport and the storage client do with their sockets
// beyond what node's Agent does: TCP keepalive on a socket while a request
// waits on it (the Agent only turns keepalive on once a socket is idle in its
// pool), and the pool emptied after a network failure.
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
