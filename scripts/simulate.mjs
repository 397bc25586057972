#!/usr/bin/env node
// The simulator: the fake cloud plus a real agent process, on this machine,
// no camera and no service account needed. It pairs nothing by hand: the fake
// seeds a paired device and the agent gets its credentials file, exactly as
// it would after `c2c-agent pair`. Runs for --minutes agent minutes (or until
// Ctrl-C with --forever) at --time-scale, then prints the fake's referee.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    'time-scale': { type: 'string', default: '60' },
    'firmware-version': { type: 'string', default: '2.1.0' },
    forever: { type: 'boolean', default: false },
    // A five-minute network outage a third of the way in, to show the agent ride it out.
    calm: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
  },
});
const scale = Number(opts['time-scale']);
const minutes = Number(opts.minutes);
if (!(scale > 0) || !(minutes > 0)) {
  console.error('simulate: --time-scale and --minutes must be positive numbers');
  process.exit(64);
}

const agentBin = path.join(root, 'dist/c2c-agent.mjs');
const say = (line) => console.log(`[sim] ${line}`);

const fake = spawn(process.execPath, [path.join(root, 'dist/fake-cloud.mjs'), '--port', '0', '--devices', '1', '--time-scale', String(scale)], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const fakeInfo = await new Promise((resolve, reject) => {
  const rl = readline.createInterface({ input: fake.stdout });
  rl.once('line', (line) => resolve(JSON.parse(line)));
  fake.once('exit', (code) => reject(new Error(`fake cloud exited with ${code}`)));
});
const device = fakeInfo.devices[0];
say(`fake cloud at ${fakeInfo.url} (admin ${fakeInfo.adminUrl}), device ${device.name ?? device.id}`);

// A camera's view of the world: state on "flash", live state on "tmpfs", a host tree with one video sensor.
const work = mkdtempSync(path.join(tmpdir(), 'c2c-sim-'));
const dirs = { state: path.join(work, 'state'), run: path.join(work, 'run'), host: path.join(work, 'host') };
for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true, mode: 0o700 });
mkdirSync(path.join(dirs.host, 'dev'), { recursive: true });
writeFileSync(path.join(dirs.host, 'dev/video0'), '');
const tokenFile = path.join(dirs.state, 'credentials.json');
writeFileSync(tokenFile, JSON.stringify({ access_token: device.accessToken, refresh_token: device.refreshToken, token_type: 'bearer' }), { mode: 0o600 });

// The same config file an administrator writes to /etc/c2c-agent/config.json.
const configFile = path.join(work, 'config.json');
const config = {
  apiUrl: fakeInfo.url,
  tokenFile,
  stateDir: dirs.state,
  runtimeDir: dirs.run,
  hostRoot: dirs.host,
  firmwareVersion: opts['firmware-version'],
};
writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);
const env = { ...process.env, C2C_CONFIG: configFile, C2C_TIME_SCALE: String(scale) };
const agent = (args) => {
  try {
    return { code: 0, out: execFileSync(process.execPath, [agentBin, ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (err) {
    return { code: err.status ?? 1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
};

const check = agent(['check']);
say(`c2c-agent check -> exit ${check.code}`);
process.stdout.write(check.out.replace(/^/gm, '      '));

const daemon = spawn(process.execPath, [agentBin, 'run'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
const logFile = path.join(work, 'agent.log');
const logLines = [];
readline.createInterface({ input: daemon.stdout }).on('line', (line) => {
  logLines.push(line);
  try {
    const rec = JSON.parse(line);
    if (rec.level >= 40 || /state|transition/i.test(rec.msg ?? '')) say(`agent: ${rec.msg}`);
  } catch {
    say(`agent (not JSON!): ${line}`);
  }
});
say(`agent pid ${daemon.pid} at --time-scale ${scale}; ${opts.forever ? 'Ctrl-C to stop' : `${minutes} agent minutes`}`);

const statusTimer = setInterval(() => {
  const s = agent(['status']);
  say(`status: ${s.out.trim().split('\n')[0]}`);
}, 10_000);

let finished = false;
async function finish(reason) {
  if (finished) return;
  finished = true;
  clearInterval(statusTimer);
  say(`stopping (${reason})`);
  const referee = await fetch(`${fakeInfo.adminUrl}/referee/${device.id}`).then((r) => r.json(), () => undefined);
  daemon.kill('SIGTERM');
  const code = await new Promise((resolve) => daemon.once('exit', (c) => resolve(c)));
  fake.kill('SIGTERM');
  writeFileSync(logFile, `${logLines.join('\n')}\n`);
  say(`agent exited with ${code}; its log: ${logFile}`);
  say(`referee: ${JSON.stringify(referee)}`);
  const bad = !referee || referee.tooSoon || referee.tooLate || referee.missingVersion || code !== 0;
  if (!opts.keep && !bad) rmSync(work, { recursive: true, force: true });
  say(bad ? 'FAILED: see above' : 'OK: the camera stayed online and within the heartbeat rules');
  process.exit(bad ? 1 : 0);
}
process.on('SIGINT', () => finish('Ctrl-C'));
process.on('SIGTERM', () => finish('SIGTERM'));
daemon.once('exit', (code) => !finished && finish(`agent exited early with ${code}`));
if (!opts.forever) setTimeout(() => finish('done'), (minutes * 60_000) / scale);
if (!opts.calm && minutes >= 15) {
  const admin = (op) => fetch(`${fakeInfo.adminUrl}/${op}`, { method: 'POST' }).catch((err) => say(`admin ${op} failed: ${err.message}`));
  setTimeout(() => {
    say('fault: the network goes away for 5 agent minutes (the fake refuses connections)');
    void admin('refuse');
    setTimeout(() => {
      say('fault over: connections accepted again');
      void admin('accept');
    }, (5 * 60_000) / scale);
  }, (minutes * 60_000) / 3 / scale);
}
