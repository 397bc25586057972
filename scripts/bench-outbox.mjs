#!/usr/bin/env node
// Benchmarks of the durable outbox (figures, not assertions; ratios against a
// baseline measured in the same run where one fits):
//
// 1. Write amplification: N channel-op-sized puts (~150-byte JSON payload)
//    and then their done records through the real Outbox over a counting
//    wrapper of the real node OutboxFs: bytes appended, fsyncs, files created,
//    per item, against the payload bytes. Then group commit: the same items
//    put one every --interval ms (each done as soon as its put is durable)
//    against all of them put at once.
// 2. Replay against the service's rate limit: the real Outbox + Dispatcher
//    (window 2) and a worker doing one GET /v2/devices/me through the real
//    api client, against the in-process fake cloud limiting that path to
//    --limit per second; then at 100/s, which shows the dispatcher's own ceiling.
// 3. Bytes the built daemon writes to its state dir (flash) during one agent
//    hour of healthy heartbeats with no channel change, seen by strace, against
//    its runtime dir (tmpfs, status.json) as the baseline (bench-outbox-strace.mjs).
//
// The TypeScript sources are bundled with esbuild into a temp .mjs (no ts
// runtime is installed); everything under the temp dir is removed at exit.
//
//   npm run bench:outbox -- [--items 1000] [--spread 30] [--interval 600] [--replay 200] [--limit 10] [--scale 600] [--json]
import { mkdtempSync, rmSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { idleHour, straceMissing } from './bench-outbox-strace.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '1000' },
    spread: { type: 'string', default: '30' },
    interval: { type: 'string', default: '600' },
    replay: { type: 'string', default: '200' },
    limit: { type: 'string', default: '10' },
    scale: { type: 'string', default: '600' },
    json: { type: 'boolean', default: false },
  },
});
const N = Number(values.items);
const SPREAD = Number(values.spread);
const INTERVAL_MS = Number(values.interval);
const M = Number(values.replay);
const LIMIT = Number(values.limit);
const CEILING_LIMIT = 100;
const SCALE = Number(values.scale);
for (const [k, v] of Object.entries({ items: N, spread: SPREAD, interval: INTERVAL_MS, replay: M, limit: LIMIT, scale: SCALE })) {
  if (!(v > 0)) {
    console.error(`bench-outbox: --${k} must be a positive number`);
    process.exit(64);
  }
}

const tmp = mkdtempSync(path.join(tmpdir(), 'c2c-bench-outbox-'));
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

/** The outbox, dispatcher, clock, api client and fake cloud, bundled from source into one temp module. */
async function load() {
  const outfile = path.join(tmp, 'outbox-bench.mjs');
  const contents = [
    "export { Outbox, readBootId } from './agent/outbox/outbox.ts';",
    "export { nodeOutboxFs } from './agent/outbox/node-fs.ts';",
    "export { Dispatcher } from './agent/outbox/dispatcher.ts';",
    "export { classify } from './agent/outbox/outcome.ts';",
    "export { SystemClock } from './agent/lib/clock.ts';",
    "export { createServiceApi } from './agent/api/service.ts';",
    "export { startFakeCloud } from './test/fake-cloud/index.ts';",
  ].join('\n');
  await build({
    stdin: { contents, resolveDir: root, loader: 'ts', sourcefile: 'bench-outbox-entry.ts' },
    bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile, logLevel: 'warning',
    banner: { js: "import { createRequire as __c2cCreateRequire } from 'node:module'; const require = __c2cCreateRequire(import.meta.url);" },
  });
  return import(pathToFileURL(outfile).href);
}

/** The real OutboxFs, counting what reaches the disk; `pages`: 4 KiB data pages each fsync makes durable (a flash write is at least one). */
function countingFs(inner) {
  const c = { appends: 0, bytes: 0, fsyncs: 0, dirFsyncs: 0, creates: 0, unlinks: 0, truncates: 0, renames: 0, pages: 0 };
  const size = new Map();
  const dirtyFrom = new Map();
  const fs = {
    ...inner,
    async append(file, data) {
      if (!size.has(file)) {
        if (!existsSync(file)) c.creates++;
        size.set(file, existsSync(file) ? statSync(file).size : 0);
      }
      if (!dirtyFrom.has(file)) dirtyFrom.set(file, size.get(file));
      await inner.append(file, data);
      c.appends++;
      c.bytes += data.length;
      size.set(file, size.get(file) + data.length);
    },
    async fsync(file) {
      await inner.fsync(file);
      c.fsyncs++;
      if (dirtyFrom.has(file)) c.pages += Math.ceil(size.get(file) / 4096) - Math.floor(dirtyFrom.get(file) / 4096);
      dirtyFrom.delete(file);
    },
    async fsyncDir(dir) {
      await inner.fsyncDir(dir);
      c.dirFsyncs++;
    },
    async truncate(file, length) {
      await inner.truncate(file, length);
      c.truncates++;
      size.set(file, length);
    },
    async rename(from, to) {
      await inner.rename(from, to);
      c.renames++;
    },
    async unlink(file) {
      await inner.unlink(file);
      c.unlinks++;
      size.delete(file);
    },
  };
  // Counts only what follows: open() (mkdir, replay, a directory fsync) is a one-off per process.
  const reset = () => Object.keys(c).forEach((k) => (c[k] = 0));
  return { fs, c, reset };
}

const KIND = 'channel-op';
const CLIENT_ID = '3576ee67-77ea-4c72-b1cc-5a33085c56e3';
/** What a channel connect would queue: ~150 bytes of JSON. */
const payload = (i) => ({ op: 'connect', key: 'video', deviceModelId: 'c2c-multi-video', externalIndex: i % 4, clientId: CLIENT_ID, why: 'detected: video' });
const payloadBytes = (n) => Array.from({ length: n }, (_, i) => Buffer.byteLength(JSON.stringify(payload(i)))).reduce((a, b) => a + b, 0);

let runNo = 0;
async function openOutbox(m, clock, counting) {
  const ob = new m.Outbox({ dir: path.join(tmp, `q${++runNo}`, 'queue'), fs: counting?.fs, clock, bootId: await m.readBootId() });
  await ob.open();
  counting?.reset();
  return ob;
}

/** n puts issued at once, then their n dones at once. */
async function burst(m, n) {
  const counting = countingFs(m.nodeOutboxFs());
  const { c } = counting;
  const ob = await openOutbox(m, new m.SystemClock(1), counting);
  const t0 = performance.now();
  const items = await Promise.all(Array.from({ length: n }, (_, i) => ob.put(KIND, payload(i))));
  await Promise.all(items.map((it) => ob.done(it.id)));
  await ob.close();
  return { mode: 'burst', items: n, payloadBytes: payloadBytes(n), seconds: (performance.now() - t0) / 1000, ...c };
}

/** n puts, one every intervalMs real ms; each done as soon as its put is durable. */
async function spread(m, n, intervalMs) {
  const counting = countingFs(m.nodeOutboxFs());
  const { c } = counting;
  const ob = await openOutbox(m, new m.SystemClock(1), counting);
  const t0 = performance.now();
  const jobs = [];
  for (let i = 0; i < n; i++) {
    jobs.push(ob.put(KIND, payload(i)).then((it) => ob.done(it.id)));
    if (i < n - 1) await sleep(intervalMs);
  }
  await Promise.all(jobs);
  await ob.close();
  return { mode: `spread (1 per ${intervalMs} ms)`, items: n, payloadBytes: payloadBytes(n), seconds: (performance.now() - t0) / 1000, ...c };
}

/** M items replayed by the real Dispatcher against the in-process fake cloud limiting GET /v2/devices/me to `limit` per second. */
async function replay(m, items, limit, timeoutMs = 120_000) {
  const cloud = await m.startFakeCloud({ rateLimit: { limit: 100, windowMs: 1000, paths: { '/v2/devices/me': { limit, windowMs: 1000 } } } });
  const device = cloud.devices[0];
  const clock = new m.SystemClock(1);
  const api = m.createServiceApi({ baseUrl: cloud.url, token: device.accessToken, firmwareVersion: '1.6.0', agentVersion: '0.0.0-bench', clock });
  try {
    const ob = await openOutbox(m, clock);
    await Promise.all(Array.from({ length: items }, (_, i) => ob.put('bench-me', payload(i))));
    const worker = {
      kind: 'bench-me',
      async run(_item, signal) {
        try {
          await api.getDevice(signal);
          return { result: 'done' };
        } catch (err) {
          return m.classify(err);
        }
      },
    };
    const dispatcher = new m.Dispatcher({ outbox: ob, workers: [worker], clock, random: Math.random, rateLimit: () => api.lastMeta?.rateLimit });
    const t0 = performance.now();
    dispatcher.start();
    dispatcher.setOpen(true);
    while ((ob.pending().length > 0 || dispatcher.view().inFlight.length > 0) && performance.now() - t0 < timeoutMs) await sleep(5);
    const seconds = (performance.now() - t0) / 1000;
    await dispatcher.stop();
    const states = {};
    for (const it of ob.items()) states[it.state] = (states[it.state] ?? 0) + 1;
    await ob.close();
    const me = cloud.journal.filter((e) => e.path === '/v2/devices/me');
    const done = states.done ?? 0;
    return { items, limit, seconds, done, states, perSecond: done / seconds, ratio: done / seconds / limit, requests: me.length, tooMany: me.filter((e) => e.status === 429).length, timedOut: ob.pending().length > 0 };
  } finally {
    api.close();
    await cloud.close();
  }
}

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const per = (a, b) => (b > 0 ? a / b : NaN);

async function main() {
  const m = await load();
  const amp = await burst(m, N);
  const burstRun = await burst(m, SPREAD);
  // The spread run and both replays wait on timers (flush windows, rate-limit
  // pauses) far more than they compute, so they run side by side: each has its
  // own queue, fake cloud and counters, and the bench stays around a minute.
  const [spreadRes, limited, ceiling] = await Promise.all([spread(m, SPREAD, INTERVAL_MS), replay(m, M, LIMIT), replay(m, M, CEILING_LIMIT)]);
  const idle = straceMissing() ? { skipped: 'strace is not installed (apt-get install strace): state-dir writes not measured' } : await idleHour({ root, tmp, scale: SCALE, children });

  const result = { amplification: amp, groupCommit: { spread: spreadRes, burst: burstRun }, replay: { limited, ceiling }, idleHour: idle };
  if (values.json) {
    console.log(JSON.stringify(result));
    return;
  }
  const rows = [];
  const section = (title) => rows.push([title]);
  const row = (...r) => rows.push(r);
  section(`1. write amplification: ${amp.items} puts then their ${amp.items} dones, all at once (${fmt(amp.seconds, 1)} s)`);
  row('bytes written per queued record (put+done) vs payload', fmt(per(amp.bytes, amp.items), 1), fmt(per(amp.payloadBytes, amp.items), 1), fmt(per(amp.bytes, amp.payloadBytes)));
  row('fsyncs per queued record (file + directory)', fmt(per(amp.fsyncs + amp.dirFsyncs, amp.items), 4), `${amp.fsyncs}+${amp.dirFsyncs} in all`, '');
  row('4 KiB pages made durable per queued record', fmt(per(amp.pages, amp.items), 3), `${amp.pages} in all`, '');
  row('segment files created / deleted', `${amp.creates} / ${amp.unlinks}`, '', '');
  const s = spreadRes;
  const b = burstRun;
  section(`   group commit, ${SPREAD} items (put+done): spread = 1 put per ${INTERVAL_MS} ms, baseline = all at once`);
  row('fsyncs per item (file + directory)', fmt(per(s.fsyncs + s.dirFsyncs, s.items)), fmt(per(b.fsyncs + b.dirFsyncs, b.items)), fmt(per(s.fsyncs + s.dirFsyncs, b.fsyncs + b.dirFsyncs)));
  row('4 KiB pages made durable per item', fmt(per(s.pages, s.items)), fmt(per(b.pages, b.items)), fmt(per(s.pages, b.pages)));
  row('bytes written per item', fmt(per(s.bytes, s.items), 1), fmt(per(b.bytes, b.items), 1), fmt(per(s.bytes, b.bytes)));
  for (const r of [limited, ceiling]) {
    section(`2. replay of ${r.items} items, GET /v2/devices/me limited to ${r.limit}/s, dispatcher window 2${r.timedOut ? ' (TIMED OUT)' : ''}`);
    row('items per second vs the limit', fmt(r.perSecond, 2), `${r.limit}`, fmt(r.ratio));
    row('429 answers / requests', `${r.tooMany} / ${r.requests}`, '', '');
    row('total time (s)', fmt(r.seconds, 1), `${fmt(r.items / r.limit, 1)} at the limit`, fmt(per(r.seconds, r.items / r.limit)));
  }
  if (idle.skipped) {
    section(`3. state-dir writes during one agent hour: SKIPPED: ${idle.skipped}`);
  } else {
    section(`3. one agent hour of healthy heartbeats (${fmt(idle.realSeconds, 1)} s at --time-scale ${idle.scale}, ${idle.heartbeats} heartbeats): state dir vs runtime dir (tmpfs on a unit)`);
    row('bytes written', `${idle.state.bytes}`, `${idle.runtime.bytes}`, idle.runtime.bytes > 0 ? fmt(per(idle.state.bytes, idle.runtime.bytes), 3) : 'n/a');
    row('write calls', `${idle.state.writes}`, `${idle.runtime.writes}`, '');
    row('file ops (opens for writing, renames, unlinks, truncates)', `${idle.state.ops}`, `${idle.runtime.ops}`, '');
    row('fsyncs', `${idle.state.fsyncs}`, `${idle.runtime.fsyncs}`, '');
    row(`  start-up + first channel sync (${fmt(idle.startupSeconds, 1)} s): bytes, ops`, `${idle.startupState.bytes}, ${idle.startupState.ops}`, `${idle.startupRuntime.bytes}, ${idle.startupRuntime.ops}`, '');
  }
  const w = [58, 14, 22, 8];
  const line = (r) => r.map((c, i) => String(c).padEnd(w[i])).join(' ').trimEnd();
  console.log(line(['measure', 'value', 'baseline', 'ratio']));
  console.log('-'.repeat(105));
  for (const r of rows) console.log(r.length === 1 ? r[0] : line(r));
  if (!idle.skipped) console.log(`files written in the hour: state dir: ${idle.state.files.join(', ') || 'none'}; runtime dir: ${idle.runtime.files.join(', ') || 'none'}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench-outbox: ${err.stack ?? err}`);
    process.exit(1);
  },
);
