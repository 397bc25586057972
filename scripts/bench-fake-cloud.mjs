#!/usr/bin/env node
// Benchmark of the fake cloud (not a test: it prints figures, asserts nothing
// about timing). Spawns the built dist/fake-cloud.mjs with 1,000 seeded
// devices and drives POST /v2/devices/heartbeat over keep-alive connections,
// round-robin over the devices, with valid tokens and x-client-version. Then
// drives a bare node:http server answering 204 with the same load, as the
// baseline of this machine, and prints both rates and their ratio.
//
// The referee sees every device heartbeat far under 60 s apart (tooSoon):
// expected for a load test and irrelevant to throughput. Rate limits are
// per device and path (100/s by default); round-robin over 1,000 devices keeps
// each bucket far below that, and any non-204 is counted and reported.
//
//   npm run bench:fake-cloud -- [--requests 20000] [--seconds 15] [--concurrency 48] [--devices 1000] [--rounds 3] [--json]
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '15' },
    concurrency: { type: 'string', default: '48' },
    devices: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    json: { type: 'boolean', default: false },
  },
});
const maxRequests = Number(values.requests);
const maxMs = Number(values.seconds) * 1000;
const concurrency = Number(values.concurrency);
const deviceCount = Number(values.devices);
const rounds = Math.max(1, Number(values.rounds));

const bundle = path.join(root, 'dist/fake-cloud.mjs');
if (!existsSync(bundle)) {
  await new Promise((resolve, reject) => {
    const b = spawn(process.execPath, [path.join(root, 'scripts/build.mjs'), '--quiet'], { stdio: 'inherit' });
    b.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`build failed: ${code}`))));
  });
}

/** Starts a child process that prints one JSON line on stdout; resolves with it. */
function startChild(args) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const info = new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line)));
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code} before it was ready`)));
  });
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return { info, stop };
}

const BASELINE = `
const http = require('node:http');
const s = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => { req.resume(); res.writeHead(204); res.end(); });
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ url: 'http://127.0.0.1:' + s.address().port })));
process.on('SIGTERM', () => { s.close(); s.closeAllConnections(); });
`;

/** Drives `concurrency` loops of heartbeats until maxRequests or maxMs; returns the figures. */
async function drive(url, tokens, warmup) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL('/v2/devices/heartbeat', url);
  const limit = warmup ? Math.min(1000, maxRequests) : maxRequests;
  let next = 0;
  let started = 0;
  const statuses = new Map();
  let errors = 0;
  const t0 = performance.now();
  const one = (token) =>
    new Promise((resolve) => {
      const req = http.request(
        target,
        { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'x-client-version': '1.0.0', 'content-length': '0' } },
        (res) => {
          res.resume();
          res.on('end', () => {
            statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end();
    });
  const loop = async () => {
    while (started < limit && (warmup || performance.now() - t0 < maxMs)) {
      started++;
      const token = tokens[next];
      next = (next + 1) % tokens.length;
      await one(token);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const ms = performance.now() - t0;
  agent.destroy();
  const ok = statuses.get(204) ?? 0;
  return { requests: started, ok, errors, statuses: Object.fromEntries(statuses), seconds: ms / 1000, perSecond: ok / (ms / 1000) };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Both servers run side by side and the rounds alternate, so a neighbour's
// load on this shared machine weighs on both figures alike; medians are reported.
// Plain HTTP, like the bare server it is compared with: this measures the fake's request handling, not TLS.
const fake = startChild([bundle, '--plain-http', '--port', '0', '--devices', String(deviceCount)]);
const base = startChild(['-e', BASELINE]);
const fakeRuns = [];
const baseRuns = [];
let referee;
try {
  const [fakeInfo, baseInfo] = await Promise.all([fake.info, base.info]);
  const tokens = fakeInfo.devices.map((d) => d.accessToken);
  const baseTokens = Array.from({ length: deviceCount }, (_, i) => `baseline-${i}`);
  await drive(fakeInfo.url, tokens, true);
  await drive(baseInfo.url, baseTokens, true);
  for (let r = 0; r < rounds; r++) {
    fakeRuns.push(await drive(fakeInfo.url, tokens, false));
    baseRuns.push(await drive(baseInfo.url, baseTokens, false));
  }
  const ref = await (await fetch(`${fakeInfo.adminUrl}/referee/${fakeInfo.devices[0].id}`)).json();
  referee = { heartbeats: ref.heartbeats, tooSoon: ref.tooSoon };
} finally {
  await Promise.all([fake.stop(), base.stop()]);
}

const fakeRate = median(fakeRuns.map((x) => x.perSecond));
const baseRate = median(baseRuns.map((x) => x.perSecond));
const ratio = fakeRate / baseRate;
if (values.json) {
  console.log(JSON.stringify({ concurrency, devices: deviceCount, rounds, fake: fakeRuns, baseline: baseRuns, fakeRate, baseRate, ratio, refereeDevice0: referee }));
} else {
  const f = (n) => n.toFixed(0).padStart(7);
  const all = (runs) => runs.map((x) => x.perSecond.toFixed(0)).join(', ');
  const statuses = {};
  for (const x of fakeRuns) for (const [k, v] of Object.entries(x.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
  const errors = fakeRuns.reduce((n, x) => n + x.errors, 0);
  console.log(`fake cloud bench: ${deviceCount} devices, ${concurrency} concurrent keep-alive requests, ${rounds} rounds of up to ${maxRequests} requests or ${maxMs / 1000} s`);
  console.log(`  fake cloud : ${f(fakeRate)} heartbeats/s (median; rounds: ${all(fakeRuns)}; statuses ${JSON.stringify(statuses)}, errors ${errors})`);
  console.log(`  bare http  : ${f(baseRate)} responses/s  (median; rounds: ${all(baseRuns)})`);
  console.log(`  ratio      : ${(ratio * 100).toFixed(1)}% of the bare node:http baseline; target >= 2000 heartbeats/s: ${fakeRate >= 2000 ? 'met' : 'NOT met'}`);
}
