// Fuzz target "media": a running daemon against the fake cloud
// (dist/fake-cloud.mjs, test/fake-cloud/README.md) with a media dir the
// fuzzer fills with hostile entries before and while it runs: clips (some in
// the channel folder, some recorded in place, some written as .part and
// renamed), clips rewritten in place or grown mid-upload, clips renamed while
// queued, symlinks inside, out of the dir, dangling, looping and to devices,
// FIFOs, sockets, device nodes, non-channel sub-folders, a channel folder
// that is a link out, non-UTF-8 names (Buffer paths), empty files. Storage
// PUTs are answered late (a delay fault) so a rewrite can land mid-upload.
//
// Oracles: nothing from outside the media dir and nothing that is not a
// regular file is ever uploaded; every regular clip's final content is
// stored exactly once, and every stored object is byte-identical (sha256 per
// part, computed here from the spec's split) to some version the file really
// had, never a mix; every entry the agent does not upload (besides writers'
// scratch names, which docs/uploads.md says are never taken) has a log line with
// a reason and shows in `queue --json` as skipped; the daemon stays up, its
// heartbeats continue (the fake's referee), and it stops with 0 on SIGTERM.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, closeSync, mkdirSync, openSync, renameSync, symlinkSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { cliProblems, firstLine, jsonOf, leakedSecret, problem } from './oracles.mjs';
import { STOP_HANG_MS, pollUntil, run, sleep, start, within } from './proc.mjs';

const FIRMWARE = '1.6.0'; // multi-av-tc: channels video, audio, timecode (firmware-profiles/multi-av-tc.json)
const CHANNEL = 'video';
const MiB = 1024 * 1024;
const sha = (b) => createHash('sha256').update(b).digest('hex');

/** The fake's own per-part hashes for `data` split into n parts (docs/service-api.md, "Uploads": part = ceil(size / n), the last to EOF). */
function partHashes(data, n) {
  const chunk = Math.ceil(data.length / n);
  return Array.from({ length: n }, (_, i) => {
    const s = Math.min(data.length, i * chunk);
    return sha(data.subarray(s, Math.min(data.length, s + chunk)));
  });
}

async function getJson(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}

async function admin(cloud, method, path, body) {
  const res = await fetch(`${cloud.adminUrl}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body !== undefined && { body: JSON.stringify(body) }) });
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
}

/**
 * A TLS front that misbehaves while the daemon works (the fake serves HTTPS
 * with its throwaway CA, the daemon trusts it through caFile): handshakes
 * cut after the ClientHello, handshakes held for agent seconds, and the
 * certificate swapped mid-run for one no client accepts, then back. All of it
 * is lifted before the clips are awaited: nothing queued may be lost to it.
 */
function tlsTrouble(rng) {
  return {
    cut: rng.pick([0, 0, 0.2, 0.5]),
    slow: rng.pick([0, 0, 0.3, 1]),
    slowMs: rng.pick([2_000, 8_000, 25_000, 45_000]),
    swapAt: rng.chance(0.6) ? rng.int(0, 6) : -1,
    swapTo: rng.pick(['expired', 'unknown-ca', 'wrong-host', 'not-yet-valid']),
  };
}

const describeTrouble = (t) =>
  `TLS front: ${t.cut > 0 ? `${t.cut * 100}% handshakes cut` : 'no handshake cut'}, ${t.slow > 0 ? `${t.slow * 100}% held ${t.slowMs} agent ms` : 'none held'}, ${t.swapAt >= 0 ? `a ${t.swapTo} certificate from step ${t.swapAt}` : 'no certificate swap'}`;

async function startCloud(ctx, scale) {
  // Its CA file in the case's temp dir: the fake ends by a kill that leaves its own temp dir behind.
  const c = start(process.execPath, [ctx.fakeCloud, '--port', '0', '--admin-port', '0', '--devices', '1', '--time-scale', String(scale), '--ca-dir', ctx.tmp], { timeoutMs: Infinity, rssLimitMiB: 2048 });
  const line = (await pollUntil(() => c.output().stdout.includes('\n') && c.output().stdout, { everyMs: 25, hangMs: 5_000 })) ?? '';
  if (!line.includes('\n')) {
    c.kill();
    throw new Error(`the fake cloud did not start: ${c.output().stderr.slice(0, 300)}`);
  }
  return { proc: c, ...JSON.parse(line.split('\n')[0]) };
}

/**
 * The media dir's entries, as the fuzzer made them: what each should become.
 * expect: 'upload' (a regular clip: its final content stored exactly once),
 * 'skip' (never uploaded; reported with a reason), 'either' (uploaded once,
 * or skipped and reported), 'scratch' (never uploaded; no report needed).
 */
class Media {
  constructor(rng, dir, outside) {
    this.rng = rng;
    this.dir = dir;
    this.outside = outside;
    this.entries = [];
    this.outsideContent = new Set();
    this.n = 0;
  }

  marker(kind) {
    return `fz${kind}${++this.n}x${this.rng.hex(6)}`;
  }

  add(e) {
    this.entries.push(e);
    return e;
  }

  /** A clip of random bytes; `old` back-dates it so the watcher takes it at first sight. */
  clip({ size, old = false, channel = false, name } = {}) {
    const marker = this.marker('clip');
    const dir = channel ? path.join(this.dir, CHANNEL) : this.dir;
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, name ?? `${marker}.mp4`);
    const data = this.rng.bytes(size ?? this.size());
    writeFileSync(file, data);
    if (old) backdate(file);
    return this.add({ marker, kind: channel ? 'channel-clip' : 'clip', expect: 'upload', file, versions: [data], final: data, links: 0 });
  }

  size() {
    return this.rng.weighted([[3, this.rng.int(1, 64 * 1024)], [3, this.rng.int(64 * 1024, 2 * MiB)], [2, this.rng.int(5 * MiB + 1, 16 * MiB)], [1, 0]]);
  }

  /** A file outside the media dir: its content must never reach the service. */
  outsideFile() {
    mkdirSync(this.outside, { recursive: true });
    const f = path.join(this.outside, `outside-${this.rng.hex(8)}.bin`);
    const data = this.rng.bytes(this.rng.int(1, 300_000));
    writeFileSync(f, data);
    this.outsideContent.add(sha(data));
    return f;
  }

  hostile(kind) {
    const marker = this.marker(kind.replace(/[^a-z]/g, ''));
    const p = path.join(this.dir, `${marker}.mp4`);
    const e = { marker, kind, expect: 'skip', file: p };
    switch (kind) {
      case 'link-out':
        symlinkSync(this.outsideFile(), p);
        break;
      case 'link-out-relative':
        symlinkSync(path.relative(this.dir, this.outsideFile()), p);
        break;
      case 'link-dangling':
        symlinkSync(`${marker}-nowhere.mp4`, p);
        break;
      case 'link-loop':
        symlinkSync(path.basename(p), p);
        break;
      case 'link-dev-zero':
        symlinkSync('/dev/zero', p);
        break;
      case 'link-dev-null':
        symlinkSync('/dev/null', p);
        break;
      case 'link-proc':
        symlinkSync('/proc/self/environ', p);
        break;
      case 'fifo':
        if (spawnSync('mkfifo', [p]).status !== 0) return undefined;
        break;
      case 'socket':
        if (spawnSync('python3', ['-c', 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', p]).status !== 0) return undefined;
        break;
      case 'device':
        if (spawnSync('mknod', [p, 'c', '1', '5']).status !== 0) return undefined;
        break;
      case 'link-in': {
        // A link to a clip inside: uploading it as its own asset, or skipping it with a reason, are both fine.
        const target = this.entries.find((x) => x.expect === 'upload' && x.kind === 'clip');
        if (target === undefined) return undefined;
        symlinkSync(path.basename(target.file), p);
        target.links++;
        e.expect = 'either';
        e.target = target;
        break;
      }
      case 'subfolder': {
        // Not a channel key: the watcher's scope is the dir and the channel folders (docs/uploads.md).
        const d = path.join(this.dir, marker);
        mkdirSync(d);
        const data = this.rng.bytes(this.rng.int(1, 100_000));
        writeFileSync(path.join(d, `${marker}-inner.mp4`), data);
        backdate(path.join(d, `${marker}-inner.mp4`));
        e.file = d;
        e.expect = 'either';
        e.final = data;
        e.versions = [data];
        e.links = 0;
        break;
      }
      case 'channel-link-out': {
        // The channel folder 'audio' as a link to a folder outside, with a clip in it.
        const d = path.join(this.outside, `dir-${this.rng.hex(6)}`);
        mkdirSync(d, { recursive: true });
        const data = this.rng.bytes(this.rng.int(1, 100_000));
        writeFileSync(path.join(d, `${marker}.mp4`), data);
        backdate(path.join(d, `${marker}.mp4`));
        this.outsideContent.add(sha(data));
        const link = path.join(this.dir, 'audio');
        try {
          symlinkSync(d, link);
        } catch {
          return undefined; // already made in this case
        }
        e.file = link;
        // Reported by its path, or by its name as a JSON value ("audio" alone would match the channel's own lines).
        e.reportNames = [link, '"audio"', d];
        break;
      }
      case 'non-utf8': {
        // A regular clip with a name that is not UTF-8: uploaded once, or skipped with a reason.
        const name = Buffer.concat([Buffer.from(`${marker}-`), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from('.mp4')]);
        const data = this.rng.bytes(this.rng.int(1, 200_000));
        const bp = Buffer.concat([Buffer.from(`${this.dir}/`), name]);
        writeFileSync(bp, data);
        backdate(bp);
        e.file = bp;
        e.expect = 'either';
        e.final = data;
        e.versions = [data];
        e.links = 0;
        break;
      }
      case 'scratch': {
        const name = this.rng.pick([`.${marker}.mp4`, `${marker}.mp4.part`, `${marker}.MP4.TMP`]);
        const q = path.join(this.dir, name);
        writeFileSync(q, this.rng.bytes(1000));
        backdate(q);
        e.file = q;
        e.expect = 'scratch';
        break;
      }
      default:
        throw new Error(`unknown hostile kind ${kind}`);
    }
    return this.add(e);
  }
}

/** Rewrites `e`'s first and last bytes in place (same size, new mtime); records the new version. */
function rewriteEnds(e, rng) {
  const data = Buffer.from(e.final);
  const n = Math.max(1, Math.min(rng.int(1, 64 * 1024), data.length >> 1));
  const fd = openSync(e.file, 'r+');
  for (const at of [0, data.length - n]) {
    rng.bytes(n).copy(data, at);
    writeSync(fd, data, at, n, at);
  }
  closeSync(fd);
  e.versions.push(data);
  e.final = data;
  e.changed = true;
  return data;
}

function backdate(file) {
  const t = (Date.now() - 3_600_000) / 1000;
  utimesSync(file, t, t);
}

const HOSTILE_KINDS = ['link-out', 'link-out-relative', 'link-dangling', 'link-loop', 'link-dev-zero', 'link-dev-null', 'link-proc', 'fifo', 'socket', 'device', 'link-in', 'subfolder', 'channel-link-out', 'non-utf8', 'scratch'];

/** Things done to the media dir while the daemon runs: [weight, (media, rng) => label | undefined]. */
const LIVE_ACTIONS = [
  [3, (m) => {
    const e = m.clip({ old: m.rng.chance(0.5), channel: m.rng.chance(0.3) });
    return `new clip ${e.marker} (${e.final.length} B)`;
  }],
  [3, (m) => {
    // Written as NAME.part, then renamed into place: the way cameras finish a clip.
    const marker = m.marker('renamed');
    const part = path.join(m.dir, `${marker}.mp4.part`);
    const data = m.rng.bytes(m.size());
    writeFileSync(part, data);
    const file = path.join(m.dir, `${marker}.mp4`);
    renameSync(part, file);
    m.add({ marker, kind: 'clip', expect: 'upload', file, versions: [data], final: data, links: 0 });
    return `clip ${marker} written as .part and renamed`;
  }],
  [4, (m, rng) => {
    // Rewritten in place, same size (a recorder fixing its header at stop): the stored object must be the final bytes.
    const e = rng.pick(m.entries.filter((x) => x.expect === 'upload' && x.final.length > 0 && !x.renamed));
    if (e === undefined) return undefined;
    const data = rewriteEnds(e, rng);
    return `${e.marker} (${data.length} B) rewritten in place`;
  }],
  [4, async (m, rng) => {
    // A clip of several parts, taken at once, then changed while its parts are on the way (the PUTs are held):
    // its first bytes rewritten (a recorder fixing its header at stop), or grown.
    const e = m.clip({ size: rng.int(10 * MiB + 1, 20 * MiB), old: true, channel: rng.chance(0.3) });
    if (rng.chance(0.7)) {
      // Its first and last bytes, as a muxer finishing a clip does, a few times over: an upload whose
      // parts straddle a rewrite would mix versions.
      const times = rng.int(1, 4);
      for (let i = 0; i < times; i++) {
        await sleep(rng.int(10, 150)); // real time: drawn against the real daemon's parts in flight
        rewriteEnds(e, rng);
      }
      return `${e.marker} (${e.final.length} B) header and trailer rewritten ${times} time(s) while uploading`;
    }
    await sleep(rng.int(20, 400)); // real time: drawn against the real daemon's parts in flight
    const more = rng.bytes(rng.int(1, MiB));
    appendFileSync(e.file, more);
    e.final = Buffer.concat([e.final, more]);
    e.versions.push(e.final);
    e.changed = true;
    return `${e.marker} grown by ${more.length} B while uploading`;
  }],
  [3, (m, rng) => {
    const e = rng.pick(m.entries.filter((x) => x.expect === 'upload' && !x.renamed));
    if (e === undefined) return undefined;
    const more = rng.bytes(rng.int(1, 2 * MiB));
    appendFileSync(e.file, more);
    e.final = Buffer.concat([e.final, more]);
    e.versions.push(e.final);
    e.changed = true;
    return `${e.marker} grown by ${more.length} B`;
  }],
  [2, (m, rng) => {
    // Renamed while queued (or uploading): its content must still be stored exactly once.
    const e = rng.pick(m.entries.filter((x) => x.expect === 'upload' && !x.renamed && x.kind === 'clip'));
    if (e === undefined) return undefined;
    const to = path.join(path.dirname(e.file), `${e.marker}-renamed.mp4`);
    renameSync(e.file, to);
    e.file = to;
    e.renamed = true;
    return `${e.marker} renamed`;
  }],
  [3, (m, rng) => {
    const e = m.hostile(rng.pick(HOSTILE_KINDS));
    return e ? `${e.kind} ${e.marker} added` : undefined;
  }],
];

/** Does `v` (queue --json) say anywhere that `marker`'s entry was skipped? */
function queueSaysSkipped(v, marker) {
  let found = false;
  const walk = (x, skipContext) => {
    if (found || x === null || typeof x !== 'object') return;
    const own = Object.entries(x);
    const mentions = own.some(([, val]) => typeof val === 'string' && val.includes(marker));
    const skipHere = skipContext || own.some(([k, val]) => /skip/i.test(k) || (typeof val === 'string' && /skip/i.test(val)));
    if (mentions && skipHere) found = true;
    for (const [k, val] of own) walk(val, skipContext || /skip/i.test(k));
  };
  walk(v, false);
  return found;
}

/** A daemon log line about `marker` that gives a reason. */
function loggedWithReason(lines, marker) {
  return lines.some((rec) => {
    const text = JSON.stringify(rec);
    return text.includes(marker) && (typeof rec.reason === 'string' || /skip|ignor|refus|not a regular|outside|loop|symbolic|fifo|socket|device/i.test(String(rec.msg)));
  });
}

export const mediaTarget = {
  name: 'media',
  async runCase(ctx) {
    const { rng } = ctx;
    if (!ctx.fakeCloud) throw new Error('the media target needs the fake cloud (dist/fake-cloud.mjs)');
    const scale = rng.pick([60, 120]);
    const cloud = await startCloud(ctx, scale);
    const problems = [];
    const desc = [];
    let daemon;
    try {
      const device = cloud.devices[0];
      const dirs = { state: path.join(ctx.tmp, 'state'), run: path.join(ctx.tmp, 'run'), media: path.join(ctx.tmp, 'media'), host: path.join(ctx.tmp, 'host'), outside: path.join(ctx.tmp, 'outside') };
      for (const d of [dirs.state, dirs.media, path.join(dirs.host, 'dev')]) mkdirSync(d, { recursive: true, mode: 0o700 });
      writeFileSync(path.join(dirs.host, 'dev/video0'), '');
      const now = Date.now();
      writeFileSync(path.join(dirs.state, 'credentials.json'), JSON.stringify({ access_token: device.accessToken, refresh_token: device.refreshToken, token_type: 'bearer', expires_in: 28800, obtained_at: new Date(now).toISOString(), expires_at: new Date(now + 28_800_000).toISOString(), clock: 'local' }), { mode: 0o600 });
      const secretFile = path.join(ctx.tmp, 'client-secret');
      writeFileSync(secretFile, `${cloud.clientSecret}\n`, { mode: 0o600 });
      chmodSync(secretFile, 0o600);
      writeFileSync(path.join(ctx.tmp, 'config.json'), '{}\n');
      const secrets = [device.accessToken, device.refreshToken, cloud.clientSecret];
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
        C2C_LOG_LEVEL: 'debug',
        ...(cloud.caFile && { C2C_CA_FILE: cloud.caFile }),
      };
      const trouble = cloud.caFile ? tlsTrouble(rng.fork('tls')) : undefined;
      if (trouble) desc.push(describeTrouble(trouble));
      // Storage answers held a few agent seconds: a rewrite can land between two parts of one upload.
      const delayMs = rng.pick([0, 2_000, 5_000, 5_000, 15_000]);
      if (delayMs > 0) await fetch(`${cloud.adminUrl}/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'delay', path: '/_storage/*', delayMs, fraction: rng.pick([0.5, 1]) }) });

      const media = new Media(rng.fork('media'), dirs.media, dirs.outside);
      for (let i = rng.int(1, 4); i > 0; i--) media.clip({ old: rng.chance(0.7), channel: rng.chance(0.3) });
      for (const kind of rng.some(HOSTILE_KINDS, 3, 8)) media.hostile(kind);
      desc.push(`run --time-scale ${scale} with storage answers held ${delayMs} agent ms; at start: ${media.entries.map((e) => `${e.kind}${e.final ? ` ${e.final.length} B` : ''}`).join(', ')}`);

      const t0 = Date.now();
      daemon = start(process.execPath, [ctx.bundle, 'run'], { env, cwd: ctx.tmp, timeoutMs: Infinity });
      let exited;
      void daemon.done.then((r) => (exited = r));
      const referee0 = await getJson(`${cloud.adminUrl}/referee/${device.id}`);
      if (trouble?.cut) await admin(cloud, 'POST', '/connection-faults', { kind: 'cut-handshake', fraction: trouble.cut });
      if (trouble?.slow) await admin(cloud, 'POST', '/connection-faults', { kind: 'slow-handshake', fraction: trouble.slow, delayMs: trouble.slowMs });
      // While it runs: clips come, change, move; hostile entries appear.
      const actions = [];
      const liveSeconds = rng.int(2, 5);
      const steps = rng.int(2, 7);
      for (let i = 0; i < steps; i++) {
        if (trouble && i === trouble.swapAt) await admin(cloud, 'POST', '/certificate', { kind: trouble.swapTo });
        await sleep((liveSeconds * 1000) / steps); // real time: the case's pacing of a real daemon
        const label = await rng.weighted(LIVE_ACTIONS)(media, rng);
        if (label) actions.push(label);
      }
      desc.push(`while running: ${actions.join('; ') || 'nothing'}`);
      if (trouble) {
        await admin(cloud, 'DELETE', '/connection-faults');
        await admin(cloud, 'POST', '/certificate', { kind: 'good' });
      }
      // Then until every regular clip's final content is stored (90 real s: a bound against a hang), plus two
      // heartbeats for duplicates: a minute and more of the daemon's time, a dozen media rescans.
      const uploads = media.entries.filter((e) => e.expect === 'upload');
      let assets = [];
      await pollUntil(async () => {
        assets = await getJson(`${cloud.adminUrl}/assets`);
        return uploads.every((e) => storedCount(assets, e.final, e.marker) > 0) || exited !== undefined;
        // 90 real s (90 agent minutes): a bound against a hang. Seed 103 outlasted it on a busy CI machine:
        // not slowness but a bug, the rewritten clip gone under a link's name (fixed in media-watcher.ts).
      }, { everyMs: 300, hangMs: 90_000 });
      const storedBeats = (await getJson(`${cloud.adminUrl}/referee/${device.id}`)).successfulHeartbeats;
      // Heartbeats go on: two more come (30 real s, half an agent hour at scale 60: a bound against a hang).
      const beatsWent = await pollUntil(async () => exited !== undefined || (await getJson(`${cloud.adminUrl}/referee/${device.id}`)).successfulHeartbeats >= storedBeats + 2, { everyMs: 100, hangMs: 30_000 });
      assets = await getJson(`${cloud.adminUrl}/assets`);
      const q = exited === undefined ? await run(process.execPath, [ctx.bundle, 'queue', '--json'], { env, cwd: ctx.tmp, timeoutMs: 15_000 }) : undefined;
      if (q) problems.push(...cliProblems(q, { label: 'queue-while-running', json: 'object', secrets }));
      const referee = await getJson(`${cloud.adminUrl}/referee/${device.id}`);
      const refereeAt = Date.now();

      if (exited !== undefined) {
        problems.push(problem('crash', `media:daemon-died-${exited.signal ?? exited.code}`, `the daemon exited ${exited.signal ?? exited.code} before SIGTERM: ${tail(exited.stdout + exited.stderr)}`));
      } else {
        daemon.signal('SIGTERM');
        const stop = await within(daemon.done, STOP_HANG_MS);
        if (stop === undefined) problems.push(problem('hang', 'media:stop-hang', `still running ${STOP_HANG_MS / 1000} real s after SIGTERM`));
        else if (stop.signal !== null || stop.code !== 0) problems.push(problem(stop.code === 1 || stop.signal ? 'crash' : 'wrong', `media:stop-exit-${stop.signal ?? stop.code}`, `exit ${stop.signal ?? stop.code} after SIGTERM: ${tail(stop.stdout + stop.stderr)}`));
      }
      daemon.kill();
      const r = await daemon.done;
      const lines = [];
      for (const l of r.stdout.split('\n').filter((x) => x !== '')) {
        try {
          lines.push(JSON.parse(l));
        } catch {
          problems.push(problem('wrong', 'media:log-not-json', `a stdout line is not JSON: ${l.slice(0, 200)}`));
          break;
        }
      }
      for (const rec of lines) if (rec.level >= 50 && /a bug|uncaught|unhandled/i.test(String(rec.msg))) problems.push(problem('crash', 'media:bug-logged', String(rec.msg).slice(0, 300)));
      if (r.rssKilled) problems.push(problem('crash', 'media:rss', `RSS passed ${r.maxRssMiB} MiB`));
      if (r.stderr.trim() !== '') problems.push(problem('wrong', 'media:stderr', `the daemon wrote to stderr: ${firstLine(r.stderr)}`));
      const leak = leakedSecret(r.stdout + r.stderr, secrets);
      if (leak) problems.push(problem('wrong', 'media:secret-leak', 'a token or the client secret appears in the log'));

      problems.push(...storedProblems(media, assets));
      const qv = q ? jsonOf(q) : undefined;
      for (const e of media.entries) {
        if (e.expect !== 'skip' && e.expect !== 'either') continue;
        if (e.expect === 'either' && e.final !== undefined && storedCount(assets, e.final, e.marker) > 0) continue;
        if (e.expect === 'either' && e.target && assets.some((a) => a.name.includes(e.marker))) continue;
        const names = e.reportNames ?? [e.marker];
        if (!names.some((n) => loggedWithReason(lines, n))) problems.push(problem('wrong', `media:skipped-silently-${e.kind}`, `${e.kind} ${e.marker} was not uploaded and no log line gives a reason`));
        if (qv && !names.some((n) => queueSaysSkipped(qv, n.replace(/^"|"$/g, '')))) problems.push(problem('wrong', `media:not-in-queue-as-skipped-${e.kind}`, `${e.kind} ${e.marker} does not show in queue --json as skipped`));
      }
      // Heartbeats go on while the media dir is busy (the fake's referee, test/fake-cloud/README.md), judged as a
      // loaded machine cannot break it (no real-ms slack): N attempts 60 agent s apart need (N - 1) minimum
      // intervals of the daemon's clock after its spawn (less 2 ms: Date.now's whole ms at either end). A
      // gap over 300 s is not judged here: load stretches gaps; that they go on at all is the two awaited
      // above. The exact spacing, pair by pair, is held on a virtual clock by
      // test/daemon/heartbeat-property.test.ts and test/e2e/heartbeat.test.ts.
      const beats = referee.successfulHeartbeats - referee0.successfulHeartbeats;
      const needMs = ((referee.heartbeats - 1) * 60_000) / scale - 2;
      if (referee.heartbeats > 1 && refereeAt - t0 < needMs) problems.push(problem('wrong', 'media:heartbeat-too-soon', `${referee.heartbeats} heartbeats within ${refereeAt - t0} real ms of the spawn at scale ${scale}: 60 agent s apart they need ${Math.ceil(needMs)}`));
      if (!beatsWent && exited === undefined) problems.push(problem('wrong', 'media:heartbeats-stopped', `${beats} heartbeats in all, and not two more within 30 real s (a bound against a hang) once the clips were stored`));
      desc.push(`stored: ${assets.filter((a) => a.complete).length} complete of ${assets.length} assets; heartbeats ${beats}`);
      return { desc, problems, result: r };
    } finally {
      daemon?.kill();
      cloud.proc.kill();
      await cloud.proc.done;
    }
  },
};

function tail(text) {
  return text.split('\n').filter((l) => l.trim() !== '').slice(-2).map((l) => l.slice(0, 300)).join(' | ');
}

/**
 * How many complete assets hold exactly `data` (per part, the fake's hashes),
 * among those named after `marker` when given (every name the fuzzer makes
 * carries its entry's marker, so two empty clips are not counted as one).
 */
function storedCount(assets, data, marker) {
  return assets.filter((a) => a.complete && (marker === undefined || a.name.includes(marker)) && a.filesize === data.length && sameParts(a, data)).length;
}

function sameParts(a, data) {
  const want = partHashes(data, a.parts.length);
  return a.parts.every((p, i) => p.sha256 === want[i]);
}

function storedProblems(media, assets) {
  const out = [];
  const outside = media.outsideContent;
  const regular = media.entries.filter((e) => e.versions !== undefined);
  for (const a of assets) {
    // Nothing that is not a regular file of the dir, and nothing from outside, is ever created at the service.
    const e = media.entries.find((x) => a.name.includes(x.marker));
    if (e && (e.expect === 'skip' || e.expect === 'scratch')) out.push(problem('wrong', `media:uploaded-${e.kind}`, `asset '${a.name.slice(0, 80)}' created for ${e.kind} ${e.marker}`));
    if (!a.complete) continue;
    if (a.parts.length === 1 && outside.has(a.parts[0].sha256)) out.push(problem('wrong', 'media:uploaded-outside-content', `asset '${a.name.slice(0, 80)}' holds a file from outside the media dir`));
    const matches = regular.some((x) => x.versions.some((v) => v.length === a.filesize && sameParts(a, v)));
    const linked = e?.target && e.target.versions.some((v) => v.length === a.filesize && sameParts(a, v));
    if (!matches && !linked && !(a.parts.length === 1 && outside.has(a.parts[0].sha256))) {
      out.push(problem('wrong', 'media:stored-corrupt', `asset '${a.name.slice(0, 80)}' (${a.filesize} B, ${a.parts.length} parts) matches no version its file ever had`));
    }
  }
  for (const e of media.entries.filter((x) => x.expect === 'upload' || (x.expect === 'either' && x.final !== undefined))) {
    const n = storedCount(assets, e.final, e.marker);
    const max = 1;
    if (e.expect === 'upload' && n === 0) out.push(problem('wrong', `media:not-stored${e.changed ? '-after-change' : ''}${e.renamed ? '-after-rename' : ''}`, `${e.kind} ${e.marker} (${e.final.length} B) final content never stored (${assets.filter((a) => a.name.includes(e.marker)).length} asset(s) by that name)`));
    if (n > max) out.push(problem('wrong', `media:stored-${n}-times${e.renamed ? '-after-rename' : ''}`, `${e.kind} ${e.marker} (${e.final.length} B) stored ${n} times`));
  }
  return out;
}
