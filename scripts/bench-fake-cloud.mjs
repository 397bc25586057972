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
//   npm run bench:fake-cloud -- [--requests 20000] [--seconds 15] [--concurrency 48] [--devices 1000]
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
    json: { type: 'boolean', default: false },
  },
});
const maxRequests = Number(values.requests);
const maxMs = Number(values.seconds) * 1000;
const concurrency = Number(values.concurrency);
const deviceCount = Number(values.devices);

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

const fake = startChild([bundle, '--port', '0', '--devices', String(deviceCount)]);
let fakeResult;
let baseResult;
try {
  const info = await fake.info;
  const tokens = info.devices.map((d) => d.accessToken);
  await drive(info.url, tokens, true);
  fakeResult = await drive(info.url, tokens, false);
  const referee = await (await fetch(`${info.adminUrl}/referee/${info.devices[0].id}`)).json();
  fakeResult.refereeDevice0 = { heartbeats: referee.heartbeats, tooSoon: referee.tooSoon };
} finally {
  await fake.stop();
}

const base = startChild(['-e', BASELINE]);
try {
  const info = await base.info;
  const tokens = Array.from({ length: deviceCount }, (_, i) => `baseline-${i}`);
  await drive(info.url, tokens, true);
  baseResult = await drive(info.url, tokens, false);
} finally {
  await base.stop();
}

const ratio = fakeResult.perSecond / baseResult.perSecond;
if (values.json) {
  console.log(JSON.stringify({ concurrency, devices: deviceCount, fake: fakeResult, baseline: baseResult, ratio }));
} else {
  const f = (n) => n.toFixed(0).padStart(7);
  console.log(`fake cloud bench: ${deviceCount} devices, ${concurrency} concurrent keep-alive requests, up to ${maxRequests} requests or ${maxMs / 1000} s`);
  console.log(`  fake cloud : ${f(fakeResult.perSecond)} heartbeats/s  (${fakeResult.ok} x 204 in ${fakeResult.seconds.toFixed(2)} s, statuses ${JSON.stringify(fakeResult.statuses)}, errors ${fakeResult.errors})`);
  console.log(`  bare http  : ${f(baseResult.perSecond)} responses/s   (${baseResult.ok} x 204 in ${baseResult.seconds.toFixed(2)} s, errors ${baseResult.errors})`);
  console.log(`  ratio      : ${(ratio * 100).toFixed(1)}% of the bare node:http baseline; target >= 2000 heartbeats/s: ${fakeResult.perSecond >= 2000 ? 'met' : 'NOT met'}`);
}
