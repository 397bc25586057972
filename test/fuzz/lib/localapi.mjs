// Fuzzer 4 (issue 20): the daemon's local API (docs/local-api.md) against
// hostile clients: a daemon with a media dir and the fake cloud, then a
// stream of requests drawn per case: the documented endpoints with bodies of
// every shape (paths inside, outside, through links out, relative, `..`,
// FIFOs, missing, huge, of the wrong type; priorities and preferences of
// every type), ids that exist and do not, garbage bytes, broken heads, bad
// encodings, lying lengths, streams opened and dropped; values nested
// 100,000 deep, requests without Host, an unknown Expect, CONNECT; and
// pipelined batches: many requests in one write on one connection (issue 27),
// PATCHes and GETs of the preferences mixed, some batches longer than the
// backlog a connection may keep, some ending in CONNECT or garbage. Every
// case ends with one such batch, so the short run in `npm test` sends them.
//
// Oracles (docs/local-api.md): every answer is a documented status (never a
// 500: that is a bug) with a JSON body, a refusal `{"error":{"kind","message"}}`
// with a one-line message; no answer carries a token, the client secret or
// the content of a file outside the media dir; nothing outside the media dir
// is ever uploaded; every clip is stored at most once and byte-identical, and
// a clip nobody cancelled is stored by the end; no more heartbeats than their
// spacing allows (the fake's referee); the daemon logs no bug, stays up and exits 0 on SIGTERM.
// A pipelined batch: its answers are those of its requests, in order, each
// JSON, each of the shape its request calls for; a GET /v1/prefs answers the
// value the last PATCH before it in the batch left; fewer answers than
// requests only when the last one is a 503 (the backlog's bound) or the
// batch's CONNECT or garbage was refused, and the connection then closed.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { leakedSecret, problem } from './oracles.mjs';
import { STOP_HANG_MS, pollUntil, start, within } from './proc.mjs';

const FIRMWARE = '1.6.0';
const DOCUMENTED = new Set([200, 202, 400, 403, 404, 405, 408, 409, 413, 417, 431, 503]);
const sha = (b) => createHash('sha256').update(b).digest('hex');

async function getJson(url) {
  const res = await fetch(url);
  return res.json();
}

async function startCloud(ctx, scale) {
  // Its CA file in the case's temp dir, as media.mjs does: the fake ends by a kill that leaves its own temp dir behind.
  const c = start(process.execPath, [ctx.fakeCloud, '--port', '0', '--admin-port', '0', '--devices', '1', '--time-scale', String(scale), '--ca-dir', ctx.tmp], { timeoutMs: Infinity, rssLimitMiB: 2048 });
  const line = (await pollUntil(() => c.output().stdout.includes('\n') && c.output().stdout, { everyMs: 25, hangMs: 5_000 })) ?? '';
  if (!line.includes('\n')) {
    c.kill();
    throw new Error(`the fake cloud did not start: ${c.output().stderr.slice(0, 300)}`);
  }
  return { proc: c, ...JSON.parse(line.split('\n')[0]) };
}

/**
 * Sends raw bytes on the socket; resolves with { status, headers, body, raw }
 * for the first answer (status 0 when none came before the server closed or
 * `waitMs` passed). One request per connection: what came back is all its.
 */
function exchange(sock, bytes, waitMs = 5_000) {
  return new Promise((resolve) => {
    const s = net.createConnection(sock);
    const chunks = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const raw = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(raw);
      if (!m) return resolve({ status: 0, raw });
      const headers = Object.fromEntries(m[2].split('\r\n').map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(m[1]), headers, body: Buffer.from(m[3], 'latin1').toString('utf8'), raw });
    };
    const timer = setTimeout(finish, waitMs);
    s.on('data', (d) => {
      chunks.push(d);
      const text = Buffer.concat(chunks).toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      if (head < 0) return;
      const len = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, head));
      if (len && Buffer.byteLength(text.slice(head + 4), 'latin1') >= Number(len[1])) finish();
    });
    s.on('error', finish);
    s.on('close', finish);
    s.on('connect', () => s.write(bytes));
  });
}

const request = (method, p, body, extra = '') => {
  const data = body === undefined ? '' : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return Buffer.concat([Buffer.from(`${method} ${p} HTTP/1.1\r\nhost: local\r\nconnection: close\r\n${data === '' ? '' : `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(data)}\r\n`}${extra}\r\n`, 'latin1'), Buffer.isBuffer(data) ? data : Buffer.from(data)]);
};

/** A request for a pipeline: no `connection: close`, so the connection serves the next one. */
const piped = (method, p, body, extra = '') => {
  const data = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  return Buffer.concat([Buffer.from(`${method} ${p} HTTP/1.1\r\nhost: local\r\n${data === '' ? '' : `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(data)}\r\n`}${extra}\r\n`, 'latin1'), Buffer.from(data)]);
};

/** A JSON value nested `depth` deep: describing it in an error message once overflowed the stack (a 500). */
const deepValue = (rng) =>
  rng.chance(0.7)
    ? ((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`)(rng.pick([100, 5_000, 100_000]))
    : // Objects too, kept well under the body cap (256 KiB): a 413 is not what this asks.
      ((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)(rng.pick([100, 5_000, 40_000]));

const isError = (a, status, kind) => a.status === status && a.body?.error?.kind === kind;
const isPrefs = (a) => a.status === 200 && typeof a.body?.autoUpload === 'boolean' && Object.keys(a.body).length === 1;

/**
 * One request of a pipelined batch: { label, bytes, check(answer) -> true when
 * the answer is one this request can get, patch?, getPrefs?, last? }.
 */
function drawPiped(rng, w) {
  return rng.weighted([
    [4, () => ({ label: 'GET /v1/prefs', bytes: piped('GET', '/v1/prefs'), check: isPrefs, getPrefs: true })],
    [4, () => {
      const autoUpload = rng.chance(0.5);
      return { label: 'PATCH /v1/prefs', bytes: piped('PATCH', '/v1/prefs', { autoUpload }), check: (a) => isPrefs(a) && a.body.autoUpload === autoUpload, patch: autoUpload };
    }],
    [2, () => ({ label: 'GET /v1/status', bytes: piped('GET', '/v1/status'), check: (a) => a.status === 200 && typeof a.body?.state === 'string', getStatus: true })],
    [2, () => ({ label: 'GET /v1/uploads', bytes: piped('GET', '/v1/uploads'), check: (a) => a.status === 200 && Array.isArray(a.body?.uploads) })],
    [1, () => ({ label: 'PATCH /v1/prefs bad', bytes: piped('PATCH', '/v1/prefs', rng.pick([{ autoUpload: 'no' }, { other: 1 }, [], '{"autoUpload": tru'])), check: (a) => isError(a, 400, 'bad-request') })],
    [1, () => ({ label: 'deep JSON', bytes: piped(rng.pick(['PATCH', 'POST']), rng.pick(['/v1/prefs', '/v1/uploads', '/v1/unpair', '/v1/pair']), deepValue(rng)), check: (a) => isError(a, 400, 'bad-request') || a.status === 405 })],
    [1, () => ({ label: 'no Host', bytes: Buffer.from(`GET /v1/prefs HTTP/1.1\r\n\r\n`, 'latin1'), check: (a) => isError(a, 400, 'bad-request') })],
    [1, () => ({ label: 'Expect', bytes: piped('GET', '/v1/prefs', undefined, 'expect: teapot\r\n'), check: (a) => isError(a, 417, 'bad-request') })],
    [1, () => ({ label: 'no such path', bytes: piped('GET', `/v1/${rng.hex(4)}`), check: (a) => isError(a, 404, 'not-found') })],
    [1, () => ({ label: 'wrong method', bytes: piped('PUT', '/v1/prefs'), check: (a) => isError(a, 405, 'method-not-allowed') })],
    [1, () => ({ label: 'PATCH /v1/uploads/{id}', bytes: piped('PATCH', `/v1/uploads/${encodeURIComponent(rng.pick(w.ids.length > 0 ? w.ids : ['x:1']))}`, { priority: rng.pick(['high', 'normal']) }), check: (a) => a.status === 200 || isError(a, 404, 'not-found') || isError(a, 409, 'conflict') })],
  ])();
}

/** What may end a batch: CONNECT (405) or bytes that are not HTTP (400); the connection closes after its answer. */
const drawLast = (rng) =>
  rng.pick([
    { label: 'CONNECT', bytes: Buffer.from('CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n', 'latin1'), check: (a) => isError(a, 405, 'method-not-allowed'), last: true },
    { label: 'garbage', bytes: Buffer.from('\x16\x03\x01 not http\r\n\r\n', 'latin1'), check: (a) => isError(a, 400, 'bad-request'), last: true },
  ]);

/** A batch: its requests, and whether it ends in CONNECT or garbage. */
function drawBatch(rng, w) {
  const n = rng.weighted([
    [6, () => rng.int(2, 12)],
    [2, () => rng.int(13, 30)],
    // Past the backlog a connection may keep (LOCAL_API.maxPipelined).
    [1, () => rng.int(31, 200)],
  ])();
  const reqs = Array.from({ length: n }, (_, i) => drawPiped(rng.fork(`piped-${i}`), w));
  if (rng.chance(0.3)) reqs.push(drawLast(rng));
  return reqs;
}

/** Answers, in order, from one connection given all `bytes` in one write, split by content-length; ends at close, `count` answers (and then the close, with `untilClose`), or `waitMs`. */
function pipeline(sock, bytes, count, untilClose, waitMs = 10_000) {
  return new Promise((resolve) => {
    const s = net.createConnection(sock);
    const answers = [];
    let buf = Buffer.alloc(0);
    let done = false;
    let closed = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ answers, closed, rest: buf.toString('latin1').slice(0, 200) });
    };
    const timer = setTimeout(finish, waitMs);
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) break;
        const head = buf.subarray(0, end).toString('latin1');
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
        const len = /\r\ncontent-length: (\d+)/i.exec(head);
        if (!len) {
          answers.push({ status, head, text: '', body: undefined });
          buf = Buffer.alloc(0);
          return finish();
        }
        if (buf.length < end + 4 + Number(len[1])) break;
        const text = buf.subarray(end + 4, end + 4 + Number(len[1])).toString('utf8');
        buf = buf.subarray(end + 4 + Number(len[1]));
        let body;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        answers.push({ status, head, text, body });
      }
      if (answers.length >= count && !untilClose) finish();
    });
    // A reset (EPIPE: the daemon closed while the rest of the batch was still being written) is a close too.
    s.on('error', () => {
      closed = true;
      finish();
    });
    s.on('close', () => {
      closed = true;
      finish();
    });
    s.on('connect', () => s.write(bytes));
  });
}

/** The oracles of one batch (see the top of the file); the value of autoUpload it leaves, when known. */
function judgeBatch(reqs, r, problems, secrets) {
  const labels = reqs.map((q) => q.label).join(', ');
  const where = (i) => `batch of ${reqs.length} [${labels.slice(0, 300)}], answer ${i}`;
  let prefs;
  for (const [i, a] of r.answers.entries()) {
    const q = reqs[i];
    if (leakedSecret(a.text, secrets)) problems.push(problem('wrong', 'localapi:secret-in-answer', `${where(i)}: an answer carries a secret`));
    if (a.status === 500) problems.push(problem('crash', `localapi:pipelined-500-${q?.label}`, `${where(i)} (${q?.label}): 500 ${a.text.slice(0, 200)}`));
    if (a.body === undefined) {
      problems.push(problem('wrong', `localapi:pipelined-not-json-${q?.label}`, `${where(i)} (${q?.label}): ${a.status} with a body that is not JSON: ${JSON.stringify(a.text.slice(0, 100))}`));
      return undefined;
    }
    if (a.status >= 400) {
      const e = a.body?.error;
      if (typeof e?.kind !== 'string' || typeof e?.message !== 'string' || e.message.includes('\n')) problems.push(problem('wrong', 'localapi:error-shape', `${where(i)}: ${a.status} ${a.text.slice(0, 200)}`));
    }
    if (q === undefined) {
      problems.push(problem('wrong', 'localapi:pipelined-extra-answer', `${where(i)}: more answers than requests`));
      return undefined;
    }
    // The backlog's bound: this one and those after it refused, the connection closed.
    if (isError(a, 503, 'unavailable') && !q.last) {
      if (i !== r.answers.length - 1 || !r.closed) problems.push(problem('wrong', 'localapi:pipelined-503-not-last', `${where(i)}: a 503 that is not the connection's last answer (${r.closed ? 'closed' : 'open'}; after it: ${r.answers.slice(i + 1, i + 4).map((x) => `${x.status} ${x.text.slice(0, 80)}`).join(' / ')}; its message: ${a.body.error.message.slice(0, 120)})`));
      if (i < 8) problems.push(problem('wrong', 'localapi:pipelined-backlog-small', `${where(i)}: refused after only ${i} answers`));
      return prefs;
    }
    if (!q.check(a)) {
      problems.push(problem('wrong', `localapi:pipelined-out-of-order-${q.label}`, `${where(i)}: ${q.label} answered ${a.status} ${a.text.slice(0, 160)} (all: ${r.answers.map((x) => x.status).join(' ')})`));
      return undefined;
    }
    if (q.patch !== undefined) prefs = a.body.autoUpload;
    if (q.getPrefs && prefs !== undefined && a.body.autoUpload !== prefs) problems.push(problem('wrong', 'localapi:pipelined-stale-read', `${where(i)}: GET /v1/prefs answered autoUpload ${a.body.autoUpload} after a PATCH in the same batch set ${prefs}`));
    if (q.getStatus && prefs !== undefined && a.body.prefs !== undefined && a.body.prefs.autoUpload !== prefs) problems.push(problem('wrong', 'localapi:pipelined-stale-status', `${where(i)}: the status document's prefs say ${a.body.prefs.autoUpload} after a PATCH in the same batch set ${prefs}`));
  }
  const last = reqs.at(-1);
  if (r.answers.length < reqs.length) {
    const final = r.answers.at(-1);
    if (!(final && isError(final, 503, 'unavailable'))) problems.push(problem('wrong', 'localapi:pipelined-missing', `batch of ${reqs.length} [${labels.slice(0, 300)}]: ${r.answers.length} answers (${r.closed ? 'closed' : 'still open'}; left: ${JSON.stringify(r.rest)}; last: ${final?.status} ${final?.text.slice(0, 150)})`));
  } else if (last?.last && !r.closed) problems.push(problem('wrong', `localapi:pipelined-open-after-${last.label}`, `batch ending in ${last.label}: the connection stayed open`));
  return prefs;
}

/** One request drawn for this case: { label, bytes, expect?: 'json' | 'any' }. */
function draw(rng, w) {
  const anyPath = () =>
    rng.weighted([
      [4, () => rng.pick(w.clips).path],
      [2, () => rng.pick(w.clips).name],
      [2, () => w.outsideFile],
      [2, () => w.linkOut],
      [1, () => `../${path.basename(w.outside)}/${path.basename(w.outsideFile)}`],
      [1, () => '/etc/passwd'],
      [1, () => w.fifo ?? '/dev/null'],
      [1, () => path.join(w.media, `missing-${rng.hex(4)}.mp4`)],
      [1, () => w.media],
      [1, () => ''],
      [1, () => 'x'.repeat(rng.pick([300, 5_000]))],
      [1, () => rng.pick([1, null, true, {}, ['a']])],
      [1, () => `${w.media}/\u0000evil`],
    ])();
  const anyId = () => rng.weighted([[3, () => rng.pick(w.ids.length > 0 ? w.ids : ['x:1'])], [1, () => `${rng.hex(8)}:${rng.int(0, 1e9)}`], [1, () => '%E0%A4%A'], [1, () => '..%2F..%2Fetc']])();
  const anyPriority = () => rng.pick(['high', 'normal', 'HIGH', '', 1, null, undefined, ['high']]);
  return rng.weighted([
    [3, () => ({ label: 'GET /v1/status', bytes: request('GET', '/v1/status') })],
    [3, () => ({ label: 'GET /v1/uploads', bytes: request('GET', '/v1/uploads') })],
    [2, () => ({ label: 'GET /v1/prefs', bytes: request('GET', '/v1/prefs') })],
    [6, () => {
      const paths = Array.from({ length: rng.int(1, 4) }, anyPath);
      const body = rng.chance(0.85) ? { paths, ...(rng.chance(0.5) && { priority: anyPriority() }) } : rng.pick([{ paths: 'a.mp4' }, [], 'null', { paths: [] }, { paths: Array(501).fill('a') }]);
      return { label: 'POST /v1/uploads', bytes: request('POST', '/v1/uploads', body), post: true };
    }],
    [2, () => ({ label: 'PATCH /v1/uploads/{id}', bytes: request('PATCH', `/v1/uploads/${anyId()}`, rng.chance(0.8) ? { priority: anyPriority() } : rng.pick(['{', [], { other: 1 }])) })],
    [1, () => ({ label: 'DELETE /v1/uploads/{id}', bytes: request('DELETE', `/v1/uploads/${anyId()}`), cancelOne: true })],
    [0.3, () => ({ label: 'DELETE /v1/uploads', bytes: request('DELETE', '/v1/uploads'), cancelAll: true })],
    [2, () => ({ label: 'PATCH /v1/prefs', bytes: request('PATCH', '/v1/prefs', rng.pick([{ autoUpload: false }, { autoUpload: true }, { autoUpload: 'no' }, { other: 1 }, [], { autoUpload: null }, '"x"', '{"autoUpload": tru'])) })],
    [1, () => ({ label: 'GET /v1/events dropped', bytes: request('GET', '/v1/events'), stream: true })],
    [1, () => ({ label: 'wrong method', bytes: request(rng.pick(['PUT', 'OPTIONS', 'TRACE', 'BREW']), rng.pick(['/v1/status', '/v1/uploads', '/v1/prefs', '/', '/v2/devices/me'])) })],
    [1, () => ({ label: 'odd path', bytes: request('GET', rng.pick(['/v1/status?x=%zz', '/v1//status', '/v1/status/', '/%00', `/${'a'.repeat(4000)}`, '*', 'http://x/v1/status'])) })],
    [1, () => ({ label: 'garbage bytes', bytes: rng.bytes(rng.int(1, 2000)), expect: 'any' })],
    [1, () => ({ label: 'broken head', bytes: Buffer.from(rng.pick(['GET /v1/status HTTP/9.9\r\n\r\n', 'GET\r\n\r\n', `GET /v1/status HTTP/1.1\r\nx-pad: ${'p'.repeat(20_000)}\r\n\r\n`, 'GET /v1/status HTTP/1.1\r\nhost: a\r\nhost b\r\n\r\n', 'POST /v1/prefs HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\nzz\r\n']), 'latin1'), expect: 'any' })],
    [1, () => ({ label: 'body over the cap', bytes: request('POST', '/v1/uploads', `{"paths":["${'a'.repeat(300 * 1024)}"]}`) })],
    [1, () => ({ label: 'length that lies', bytes: Buffer.from('PATCH /v1/prefs HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{"autoUpload":false}', 'latin1'), expect: 'any' })],
    [1, () => ({ label: 'deep JSON', bytes: request(rng.pick(['PATCH', 'POST']), rng.pick(['/v1/prefs', '/v1/uploads', '/v1/unpair', '/v1/pair', `/v1/uploads/${anyId()}`]), deepValue(rng)) })],
    [1, () => ({ label: 'no Host', bytes: Buffer.from(`${rng.pick(['GET /v1/status', 'PATCH /v1/prefs', 'GET /v1/uploads'])} HTTP/1.1\r\nconnection: close\r\n\r\n`, 'latin1') })],
    [0.5, () => ({ label: 'CONNECT', bytes: Buffer.from(`CONNECT ${rng.pick(['example.com:443', '127.0.0.1:22', '/v1/status'])} HTTP/1.1\r\nhost: x\r\n\r\n`, 'latin1') })],
    [0.5, () => ({ label: 'Expect', bytes: request('GET', '/v1/status', undefined, `expect: ${rng.pick(['teapot', '200-ok', ''])}\r\n`), expect: 'any' })],
    [3, () => ({ label: 'pipelined batch', batch: drawBatch(rng, w) })],
  ])();
}

export const localapiTarget = {
  name: 'localapi',
  async runCase(ctx) {
    const { rng } = ctx;
    if (!ctx.fakeCloud) throw new Error('the localapi target needs the fake cloud (dist/fake-cloud.mjs)');
    const scale = rng.pick([60, 120]);
    const cloud = await startCloud(ctx, scale);
    const problems = [];
    const desc = [];
    let daemon;
    try {
      const device = cloud.devices[0];
      const dirs = { state: path.join(ctx.tmp, 'state'), run: path.join(ctx.tmp, 'run'), media: path.join(ctx.tmp, 'media'), host: path.join(ctx.tmp, 'host'), outside: path.join(ctx.tmp, 'outside') };
      for (const d of [dirs.state, dirs.media, dirs.outside, path.join(dirs.host, 'dev')]) mkdirSync(d, { recursive: true, mode: 0o700 });
      const now = Date.now();
      writeFileSync(path.join(dirs.state, 'credentials.json'), JSON.stringify({ access_token: device.accessToken, refresh_token: device.refreshToken, token_type: 'bearer', expires_in: 28800, obtained_at: new Date(now).toISOString(), expires_at: new Date(now + 28_800_000).toISOString(), clock: 'local' }), { mode: 0o600 });
      const secretFile = path.join(ctx.tmp, 'client-secret');
      writeFileSync(secretFile, `${cloud.clientSecret}\n`, { mode: 0o600 });
      chmodSync(secretFile, 0o600);
      writeFileSync(path.join(ctx.tmp, 'config.json'), '{}\n');
      // A file outside the media dir with content no clip has, and a link to it inside.
      const outsideMarker = `OUTSIDE-${rng.hex(12)}`;
      const outsideFile = path.join(dirs.outside, 'secret.mp4');
      writeFileSync(outsideFile, `${outsideMarker}\n`);
      const linkOut = path.join(dirs.media, 'link-out.mp4');
      symlinkSync(outsideFile, linkOut);
      let fifo;
      if (spawnSync('mkfifo', [path.join(dirs.media, 'pipe.mp4')]).status === 0) fifo = path.join(dirs.media, 'pipe.mp4');
      const clips = [];
      for (let i = rng.int(2, 4); i > 0; i--) {
        const name = `clip-${rng.hex(6)}.mp4`;
        const data = rng.bytes(rng.pick([0, 1, 1000, 300_000]));
        const p = path.join(dirs.media, name);
        writeFileSync(p, data);
        const t = (now - 3_600_000) / 1000;
        utimesSync(p, t, t);
        clips.push({ name, path: p, data });
      }
      const secrets = [device.accessToken, device.refreshToken, cloud.clientSecret, outsideMarker];
      const env = {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        C2C_CONFIG: path.join(ctx.tmp, 'config.json'),
        C2C_API_URL: cloud.url,
        C2C_STATE_DIR: dirs.state,
        C2C_RUNTIME_DIR: dirs.run,
        C2C_TIME_SCALE: String(scale),
        C2C_CLIENT_SECRET_FILE: secretFile,
        C2C_CLIENT_ID: device.clientId,
        C2C_FIRMWARE_VERSION: FIRMWARE,
        C2C_HOST_ROOT: dirs.host,
        C2C_MEDIA_DIR: dirs.media,
        C2C_MEDIA_SETTLE_SECONDS: '1',
        C2C_LOG_LEVEL: 'debug',
        ...(cloud.caFile && { C2C_CA_FILE: cloud.caFile }),
      };
      const t0 = Date.now();
      daemon = start(process.execPath, [ctx.bundle, 'run'], { env, cwd: ctx.tmp, timeoutMs: Infinity });
      let exited;
      void daemon.done.then((r) => (exited = r));
      const sock = path.join(dirs.run, 'api.sock');
      await pollUntil(() => existsSync(sock) || exited !== undefined, { everyMs: 25, hangMs: 10_000 });
      if (!existsSync(sock)) problems.push(problem('wrong', 'localapi:no-socket', `no ${sock} 10 s after start`));

      const w = { clips, media: dirs.media, outside: dirs.outside, outsideFile, linkOut, fifo, ids: [] };
      const names = new Map();
      let cancelAll = false;
      const cancelled = new Set();
      const counts = {};
      const n = rng.int(15, 45);
      for (let i = 0; i < n && exited === undefined && existsSync(sock); i++) {
        const req = draw(rng.fork(`req-${i}`), w);
        counts[req.label] = (counts[req.label] ?? 0) + 1;
        if (req.batch) {
          judgeBatch(req.batch, await pipeline(sock, Buffer.concat(req.batch.map((q) => q.bytes)), req.batch.length, req.batch.at(-1).last === true), problems, secrets);
          continue;
        }
        const a = await exchange(sock, req.bytes, req.stream ? 300 : 5_000);
        if (req.stream) {
          if (a.status !== 200 && a.status !== 0) problems.push(problem('wrong', 'localapi:events-status', `GET /v1/events answered ${a.status}`));
          continue;
        }
        const leak = leakedSecret(a.raw ?? '', secrets);
        if (leak) problems.push(problem('wrong', 'localapi:secret-in-answer', `${req.label}: an answer carries a secret or the outside file's content`));
        if (a.status === 0) {
          if (req.expect !== 'any') problems.push(problem('wrong', `localapi:no-answer-${req.label}`, `${req.label}: no answer within 5 s (${JSON.stringify((a.raw ?? '').slice(0, 100))})`));
          continue;
        }
        if (a.status === 500) problems.push(problem('crash', `localapi:500-${req.label}`, `${req.label}: 500 ${a.body?.slice(0, 300)}`));
        else if (!DOCUMENTED.has(a.status)) problems.push(problem('wrong', `localapi:status-${a.status}`, `${req.label}: undocumented status ${a.status}`));
        let body;
        try {
          body = JSON.parse(a.body);
        } catch {
          problems.push(problem('wrong', `localapi:not-json-${req.label}`, `${req.label}: ${a.status} with a body that is not JSON: ${(a.body ?? '').slice(0, 200)}`));
          continue;
        }
        if (a.status >= 400) {
          const e = body?.error;
          if (typeof e?.kind !== 'string' || typeof e?.message !== 'string' || e.message.includes('\n') || e.message.length > 2000) problems.push(problem('wrong', 'localapi:error-shape', `${req.label}: ${a.status} ${a.body.slice(0, 200)}`));
          continue;
        }
        if (req.post) {
          for (const u of body.uploads ?? []) {
            if (typeof u.id !== 'string') continue;
            w.ids.push(u.id);
            names.set(u.id, path.basename(String(u.file ?? u.path)));
          }
        }
        if (req.cancelAll) cancelAll = true;
        if (req.cancelOne && typeof body.upload?.id === 'string') {
          cancelled.add(body.upload.id);
          if (typeof body.upload.name === 'string') names.set(body.upload.id, body.upload.name);
        }
      }
      // Every case ends with a batch mixing PATCHes and GETs of the preferences, a deep body, a request without Host, and CONNECT or garbage.
      if (exited === undefined && existsSync(sock)) {
        const brng = rng.fork('final-batch');
        const flip = (v) => ({ label: 'PATCH /v1/prefs', bytes: piped('PATCH', '/v1/prefs', { autoUpload: v }), check: (a) => isPrefs(a) && a.body.autoUpload === v, patch: v });
        const read = { label: 'GET /v1/prefs', bytes: piped('GET', '/v1/prefs'), check: isPrefs, getPrefs: true };
        const mixed = [];
        for (let k = brng.int(2, 6); k > 0; k--) mixed.push(flip(brng.chance(0.5)), read);
        const odd = [
          { label: 'deep JSON', bytes: piped('PATCH', '/v1/prefs', `{"autoUpload":${deepValue(brng)}}`), check: (a) => isError(a, 400, 'bad-request') },
          { label: 'no Host', bytes: Buffer.from('GET /v1/prefs HTTP/1.1\r\n\r\n', 'latin1'), check: (a) => isError(a, 400, 'bad-request') },
        ];
        const batch = [...mixed];
        for (const q of odd) batch.splice(brng.int(0, batch.length), 0, q);
        batch.push(read, drawLast(brng));
        judgeBatch(batch, await pipeline(sock, Buffer.concat(batch.map((q) => q.bytes)), batch.length, true), problems, secrets);
        counts['final batch'] = batch.length;
      }
      desc.push(`run --time-scale ${scale}, ${clips.length} clips (${clips.map((c) => c.data.length).join(', ')} B); ${n} requests: ${Object.entries(counts).map(([k, v]) => `${k} x${v}`).join(', ')}`);

      // autoUpload back on; every clip nobody cancelled must then go, exactly once.
      await exchange(sock, request('PATCH', '/v1/prefs', { autoUpload: true }));
      const list = JSON.parse((await exchange(sock, request('GET', '/v1/uploads'))).body ?? '{"uploads":[]}').uploads ?? [];
      for (const u of list) if (!names.has(u.id)) names.set(u.id, u.name);
      const cancelledNames = new Set([...cancelled].map((id) => names.get(id)).filter(Boolean));
      const mustGo = cancelAll ? [] : clips.filter((c) => !cancelledNames.has(c.name));
      // Every clip that must go stored (30 real s: a bound against a hang), then two heartbeats for duplicates:
      // a minute and more of the daemon's time.
      let assets = [];
      await pollUntil(async () => {
        assets = await getJson(`${cloud.adminUrl}/assets`);
        return mustGo.every((c) => assets.some((x) => x.complete && x.name === c.name)) || exited !== undefined;
      }, { everyMs: 300, hangMs: 30_000 });
      const storedBeats = (await getJson(`${cloud.adminUrl}/referee/${device.id}`)).successfulHeartbeats;
      await pollUntil(async () => exited !== undefined || (await getJson(`${cloud.adminUrl}/referee/${device.id}`)).successfulHeartbeats >= storedBeats + 2, { everyMs: 100, hangMs: 30_000 });
      assets = await getJson(`${cloud.adminUrl}/assets`);
      for (const x of assets) {
        const clip = clips.find((c) => c.name === x.name);
        if (clip === undefined) {
          problems.push(problem('wrong', 'localapi:uploaded-not-a-clip', `the service got ${x.name}, which is no clip of the media dir`));
          continue;
        }
        if (x.complete && x.filesize !== clip.data.length) problems.push(problem('wrong', 'localapi:stored-wrong-size', `${x.name}: ${x.filesize} B stored, ${clip.data.length} B on disk`));
      }
      for (const c of clips) {
        const stored = assets.filter((x) => x.complete && x.name === c.name).length;
        if (stored > 1) problems.push(problem('wrong', 'localapi:stored-twice', `${c.name} stored ${stored} times`));
        if (stored === 0 && mustGo.includes(c)) problems.push(problem('wrong', 'localapi:clip-not-stored', `${c.name} (sha256 ${sha(c.data).slice(0, 12)}) was never cancelled and is not stored 30 s after autoUpload went back on`));
      }
      // Heartbeat spacing as a loaded machine cannot break it (no real-ms slack): N attempts 60 agent s apart
      // need (N - 1) minimum intervals of the daemon's clock after its spawn (less 2 ms: Date.now's whole ms
      // at either end). Gaps over 300 s are not judged here: load stretches them. The exact spacing, pair by
      // pair, is held on a virtual clock by test/daemon/heartbeat-property.test.ts and test/e2e/heartbeat.test.ts.
      const referee = await getJson(`${cloud.adminUrl}/referee/${device.id}`);
      const refereeAt = Date.now();
      const needMs = ((referee.heartbeats - 1) * 60_000) / scale - 2;
      if (referee.heartbeats > 1 && refereeAt - t0 < needMs) problems.push(problem('wrong', 'localapi:heartbeat-too-soon', `${referee.heartbeats} heartbeats within ${refereeAt - t0} real ms of the spawn at scale ${scale}: 60 agent s apart they need ${Math.ceil(needMs)}`));

      if (exited !== undefined) {
        problems.push(problem('crash', `localapi:daemon-died-${exited.signal ?? exited.code}`, `the daemon exited ${exited.signal ?? exited.code} before SIGTERM`));
      } else {
        daemon.signal('SIGTERM');
        const stop = await within(daemon.done, STOP_HANG_MS);
        if (stop === undefined) problems.push(problem('hang', 'localapi:stop-hang', `still running ${STOP_HANG_MS / 1000} real s after SIGTERM`));
        else if (stop.signal !== null || stop.code !== 0) problems.push(problem(stop.code === 1 || stop.signal ? 'crash' : 'wrong', `localapi:stop-exit-${stop.signal ?? stop.code}`, `exit ${stop.signal ?? stop.code} after SIGTERM`));
        if (existsSync(sock)) problems.push(problem('wrong', 'localapi:socket-left', `${sock} left after a clean stop`));
      }
      daemon.kill();
      const r = await daemon.done;
      for (const l of r.stdout.split('\n').filter((x) => x !== '')) {
        let rec;
        try {
          rec = JSON.parse(l);
        } catch {
          continue;
        }
        if (rec.level >= 50 && /a bug|uncaught|unhandled/i.test(String(rec.msg))) problems.push(problem('crash', 'localapi:bug-logged', String(rec.msg).slice(0, 300)));
      }
      if (leakedSecret(r.stdout + r.stderr, secrets.slice(0, 3))) problems.push(problem('wrong', 'localapi:secret-leak', 'a token or the client secret appears in the log'));
      if (r.rssKilled) problems.push(problem('crash', 'localapi:rss', `RSS passed ${r.maxRssMiB} MiB`));
      desc.push(`stored ${assets.filter((a) => a.complete).length} of ${clips.length} clips (${mustGo.length} had to go); heartbeats ${referee.successfulHeartbeats} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      return { desc, problems, result: r };
    } finally {
      daemon?.kill();
      cloud.proc.kill();
      await cloud.proc.done;
    }
  },
};
