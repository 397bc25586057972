// A hostile HTTP/1.1 server on 127.0.0.1, written on raw node:net so an answer
// can be any bytes at all: a truncated status line, a lying Content-Length,
// chunked garbage, a 101 upgrade, a body that never ends, nothing. Requests
// are parsed here (head, then a Content-Length or chunked body); the answer
// to each comes from `plan(request)` (hostile-answers.mjs), which returns
// {label, outcome, write(io)}; `write` resolves 'keep' (read the next request
// on this connection), 'close' or 'hang' (leave it open and silent). Every
// wait is bounded and ends when the server closes, and every socket is
// destroyed by close(), so no case leaves a timer or a connection behind.
//
// With `tls`, the same server speaks HTTPS (a throwaway CA, scripts/lib/certs.mjs)
// behind a TLS front that misbehaves on its own: `tls.trouble()` decides per
// new connection whether its handshake is cut after the ClientHello, held for
// a while, or served a certificate no client accepts (expired, not yet valid,
// for another host, from an unknown CA). Those connections never carry a
// request, so they are in no log entry: the client saw a failure the planner
// never chose, which the oracles must accept like any network failure.
import net from 'node:net';
import tlsModule from 'node:tls';
import { certificateFor, makeCa } from '../../../scripts/lib/certs.mjs';

const MAX_HEAD = 4 * 1024 * 1024;
const MAX_BODY = 64 * 1024 * 1024;

export async function startHostileServer({ plan, onError, tls }) {
  const conns = new Set();
  const log = [];
  const counts = new Map();
  let closing = false;
  const closers = new Set();
  const t0 = Date.now();
  // This process's own stalls (a loaded machine): a request's `t` is stamped when the event loop gets to
  // it, so it can be late by a stall. Each tick that came late is kept, so an oracle can widen its
  // tolerance around a request by what this server itself lost there (`stallAround`).
  const TICK_MS = 5;
  const stalls = [];
  let lastTick = Date.now();
  const ticker = setInterval(() => {
    const now = Date.now();
    if (now - lastTick > 2 * TICK_MS) stalls.push({ at: now - t0, ms: now - lastTick - TICK_MS });
    lastTick = now;
  }, TICK_MS);
  ticker.unref();

  /** Resolves after ms, or at once when the server closes. */
  const delay = (ms) =>
    new Promise((resolve) => {
      if (closing) return resolve();
      const t = setTimeout(() => {
        closers.delete(stop);
        resolve();
      }, ms);
      const stop = () => {
        clearTimeout(t);
        resolve();
      };
      closers.add(stop);
    });

  function ioFor(conn) {
    const { sock } = conn;
    const gone = () => sock.destroyed || closing || !sock.writable;
    return {
      sock,
      delay,
      gone,
      /** Writes with backpressure; false once the peer went away. */
      async write(chunk) {
        if (gone()) return false;
        conn.last = Date.now();
        if (sock.write(chunk)) return true;
        await new Promise((resolve) => {
          const done = () => {
            sock.off('drain', done);
            sock.off('close', done);
            resolve();
          };
          sock.once('drain', done);
          sock.once('close', done);
        });
        return !gone();
      },
      end() {
        if (!sock.destroyed) sock.end();
      },
      destroy() {
        sock.destroy();
      },
      /** Half-closed by the peer? */
      peerEnded: () => conn.peerEnded,
    };
  }

  function parseHead(text) {
    const lines = text.split('\r\n');
    const [method, target, version] = (lines.shift() ?? '').split(' ');
    const headers = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const q = (target ?? '').indexOf('?');
    return { method, target, version, path: q < 0 ? target : target.slice(0, q), query: q < 0 ? '' : target.slice(q + 1), headers };
  }

  /** A chunked body: {body, rest} once complete, undefined while more is needed, null when it is garbage. */
  function parseChunked(buf) {
    const parts = [];
    let at = 0;
    for (;;) {
      const eol = buf.indexOf('\r\n', at);
      if (eol < 0) return undefined;
      const size = parseInt(buf.subarray(at, eol).toString('latin1').split(';')[0], 16);
      if (!Number.isFinite(size) || size < 0) return null;
      if (size === 0) {
        // Trailers, if any, end with an empty line; without them the empty line follows at once.
        const end = buf.indexOf('\r\n\r\n', eol);
        if (end < 0) return buf.length - eol > 8192 ? null : undefined;
        return { body: Buffer.concat(parts), rest: buf.subarray(end + 4) };
      }
      if (buf.length < eol + 2 + size + 2) return undefined;
      parts.push(buf.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
  }

  async function serve(conn) {
    if (conn.busy || closing) return;
    const headEnd = conn.buf.indexOf('\r\n\r\n');
    if (headEnd < 0) {
      if (conn.buf.length > MAX_HEAD) conn.sock.destroy();
      return;
    }
    const req = parseHead(conn.buf.subarray(0, headEnd).toString('latin1'));
    let body;
    let rest;
    const after = conn.buf.subarray(headEnd + 4);
    if (/chunked/i.test(req.headers['transfer-encoding'] ?? '')) {
      const c = parseChunked(after);
      if (c === null) return conn.sock.destroy();
      if (c === undefined) return;
      ({ body, rest } = c);
    } else {
      const n = Number(req.headers['content-length'] ?? 0);
      if (!Number.isFinite(n) || n < 0 || n > MAX_BODY) return conn.sock.destroy();
      if (after.length < n) return;
      body = after.subarray(0, n);
      rest = after.subarray(n);
    }
    conn.buf = Buffer.from(rest);
    conn.busy = true;
    req.body = body;
    req.at = Date.now() - t0;
    let answer;
    try {
      answer = plan(req);
    } catch (err) {
      onError?.(err);
      answer = { label: 'planner-error', outcome: { kind: 'status', status: 500 }, write: async (io) => (await io.write('HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n'), 'keep') };
    }
    const key = answer.route ?? 'other';
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const entry = { t: req.at, method: req.method, path: req.path, route: answer.route, label: answer.label, outcome: answer.outcome, bodyBytes: body.length, end: undefined };
    log.push(entry);
    conn.state = 'answering';
    conn.label = `${req.method} ${req.path} -> ${answer.label}`;
    let next;
    try {
      next = await answer.write(ioFor(conn));
    } catch (err) {
      // EPIPE and friends: the agent went away mid-answer, which it may.
      next = 'close';
    }
    entry.end = Date.now() - t0;
    conn.last = Date.now();
    if (next === 'hang') {
      conn.state = 'hanging';
      return;
    }
    if (next === 'close' || conn.sock.destroyed) {
      conn.state = 'closed';
      if (!conn.sock.destroyed) conn.sock.end();
      setTimeout(() => conn.sock.destroy(), 200).unref();
      return;
    }
    conn.state = 'idle';
    conn.busy = false;
    if (conn.buf.length > 0) void serve(conn);
  }

  const accept = (sock) => {
    if (closing) return sock.destroy();
    const conn = { sock, buf: Buffer.alloc(0), busy: false, state: 'idle', opened: Date.now(), last: Date.now(), peerEnded: false };
    conns.add(conn);
    sock.on('data', (d) => {
      conn.last = Date.now();
      if (conn.busy) return; // bytes sent while we answer (or hang) are ignored, as a stuck server would
      conn.buf = conn.buf.length === 0 ? d : Buffer.concat([conn.buf, d]);
      void serve(conn);
    });
    sock.on('end', () => {
      conn.peerEnded = true;
    });
    sock.on('error', () => undefined);
    sock.on('close', () => conns.delete(conn));
    sock.setNoDelay?.(true);
  };
  const front = tls ? tlsFront(tls, accept, delay, () => closing) : undefined;
  const server = net.createServer(front?.connection ?? accept);
  server.maxConnections = 512;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = server.address().port;

  return {
    port,
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    /** The CA to trust (PEM) over TLS, else undefined. */
    caPem: front?.caPem,
    /** Connections the TLS front spoiled before any request: { cut, held, badCertificate }. */
    tlsTrouble: front?.counts,
    log,
    counts,
    /** Real ms since the server started: the clock of each log entry's `t`. */
    now: () => Date.now() - t0,
    /** The longest stall of this server's event loop seen from `fromMs` to `toMs` (real ms since start). */
    stallAround(fromMs, toMs) {
      return stalls.reduce((m, x) => (x.at >= fromMs && x.at - x.ms <= toMs ? Math.max(m, x.ms) : m), 0);
    },
    /** Connections still open, with how long (real ms) nothing has moved on them. */
    openConnections() {
      const now = Date.now();
      return [...conns].map((c) => ({ state: c.state, idleMs: now - c.last, ageMs: now - c.opened, peerEnded: c.peerEnded, label: c.label }));
    },
    async close() {
      closing = true;
      clearInterval(ticker);
      for (const stop of closers) stop();
      closers.clear();
      for (const c of conns) c.sock.destroy();
      front?.close();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The TLS front: every raw connection is handed to one TLS server (never
 * listening itself), whose certificate is chosen just before (a good one, or
 * a bad one the trouble asked for), or cut, or held first.
 * tls: { trouble(): undefined | { kind: 'cut' } | { kind: 'hold', ms } | { kind: 'certificate', certificate } }
 */
function tlsFront(tls, accept, delay, closing) {
  const ca = makeCa('c2c-agent fuzz CA (throwaway)');
  const good = certificateFor(ca, { kind: 'good' });
  const contexts = new Map();
  const contextFor = (kind) => {
    if (!contexts.has(kind)) {
      const c = kind === 'good' ? good : certificateFor(ca, { kind });
      contexts.set(kind, { cert: c.certPem, key: c.keyPem });
    }
    return contexts.get(kind);
  };
  const server = tlsModule.createServer({ ...contextFor('good') }, accept);
  server.on('tlsClientError', () => undefined);
  const raws = new Set();
  const counts = { cut: 0, held: 0, badCertificate: 0 };
  const handOver = (raw, kind) => {
    if (raw.destroyed || closing()) return raw.destroy();
    // Handshakes are set up synchronously on 'connection': the context set now is this connection's.
    server.setSecureContext(contextFor(kind));
    server.emit('connection', raw);
  };
  return {
    caPem: ca.certPem,
    counts,
    connection(raw) {
      if (closing()) return raw.destroy();
      raws.add(raw);
      raw.on('close', () => raws.delete(raw));
      raw.on('error', () => undefined);
      const t = tls.trouble();
      if (t?.kind === 'cut') {
        counts.cut++;
        raw.once('data', () => raw.destroy());
        return;
      }
      if (t?.kind === 'hold') {
        counts.held++;
        void delay(t.ms).then(() => handOver(raw, 'good'));
        return;
      }
      if (t?.kind === 'certificate') counts.badCertificate++;
      handOver(raw, t?.kind === 'certificate' ? t.certificate : 'good');
    },
    close() {
      for (const r of raws) r.destroy();
    },
  };
}
