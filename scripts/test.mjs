// npm test: every step, on both cores. The build comes first (every other
// step runs dist/). Then jest runs in the foreground, its output live, on three
// workers (jest.config.js), while one background chain runs the steps that mostly wait (a
// container booting, qemu, a 20 s run of the agent under qemu) or take one core for a
// few seconds: the type check, the bundle on Node 20/22/24, on ARM, and
// under systemd. Their output is held and printed, whole and in order, after
// jest's. Every step runs even when one fails; the end is one line per step
// with its time, and the exit code is the first failed step's.
//
// A new step goes into BACKGROUND when it is mostly waiting or is short, into
// jest when it is a suite (docs/testing.md, "Test time budget").
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import path from 'node:path';
import { provide } from './system-tools.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const node = process.execPath;

/** [name, command, args, extra env] */
const BUILD = ['build', node, ['scripts/build.mjs']];
const JEST = ['jest', node, ['node_modules/jest/bin/jest.js'], { NODE_OPTIONS: [process.env.NODE_OPTIONS, '--experimental-vm-modules'].filter(Boolean).join(' ') }];
/**
 * Lanes of steps beside jest: the steps of a lane run one after another, the lanes at once. One
 * lane: the systemd step beside ARM (qemu keeps a core busy) made jest's suites that judge real
 * time fail on the busier machine, for no gain (jest is the long pole).
 */
const BACKGROUND = [
  [
    ['typecheck', node, ['node_modules/typescript/bin/tsc', '--noEmit']],
    ['test:node-versions', node, ['scripts/node-versions.mjs']],
    ['test:systemd', node, ['scripts/test-systemd.mjs']],
    ['test:arm', node, ['scripts/test-arm.mjs']],
  ],
];

/**
 * The background chain's niceness: when both cores are busy, jest's suites (whose timing judges
 * the agent) get about three quarters of the CPU, and the chain still ends before jest does.
 */
const BACKGROUND_NICE = 5;

const children = new Set();
const results = [];

/** Runs one step; `live` streams its output, else it is kept and returned. */
function run([name, cmd, args, env = {}], live) {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    // Before the step forks anything of its own, so its children (a container, qemu) inherit it.
    if (!live && child.pid !== undefined) {
      try {
        setPriority(child.pid, BACKGROUND_NICE);
      } catch {
        // already gone (ESRCH): its exit is reported below
      }
    }
    const out = [];
    if (!live) {
      child.stdout.on('data', (d) => out.push(d));
      child.stderr.on('data', (d) => out.push(d));
    }
    const done = (code, why) => {
      children.delete(child);
      const r = { name, code, seconds: (Date.now() - t0) / 1000, output: Buffer.concat(out).toString(), why };
      results.push(r);
      resolve(r);
    };
    child.once('error', (err) => done(127, err.message));
    child.once('exit', (code, signal) => done(code ?? 128, signal ? `ended by ${signal}` : undefined));
  });
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    // Each step cleans up after itself on SIGINT/SIGTERM (test:systemd removes its container).
    for (const c of children) c.kill(signal === 'SIGHUP' ? 'SIGTERM' : signal);
    process.exitCode = signal === 'SIGINT' ? 130 : 143;
  });
}

const started = Date.now();
// The system tools the suites need (scripts/system-tools.mjs): installed as root with apt, else
// each suite that cannot run is one line and is left out; under CI that fails the run.
const tools = provide({ log: (line) => process.stdout.write(`npm test: ${line}\n`) });
const leftOut = new Set(tools.missing.map((n) => n.name));
for (const n of tools.missing) process.stdout.write(`npm test: not running ${n.name}: ${n.why}; to run it: ${n.fix}\n`);
if (tools.missing.length > 0) {
  const ci = process.env.CI === 'true';
  results.push({ name: 'system tools', code: ci ? 69 : 0, seconds: 0, output: '', why: ci ? `CI=true and ${tools.missing.length} left out` : undefined });
}
const jestIgnores = tools.missing.filter((n) => n.kind === 'jest').map((n) => n.paths);
const jest = [JEST[0], JEST[1], [...JEST[2], ...(jestIgnores.length > 0 ? ['--testPathIgnorePatterns', '/node_modules/', ...jestIgnores] : [])], JEST[3]];
const build = await run(BUILD, true);
if (build.code === 0) {
  const background = Promise.all(
    BACKGROUND.map(async (lane) => {
      for (const step of lane) {
        if (leftOut.has(step[0])) results.push({ name: step[0], code: 0, seconds: 0, output: '', skipped: true });
        else await run(step, false);
      }
    }),
  );
  await run(jest, true);
  await background;
  for (const r of results.filter((x) => x.output !== '')) {
    process.stdout.write(`\n── ${r.name} ${'─'.repeat(Math.max(0, 60 - r.name.length))}\n${r.output}`);
  }
}

const order = ['system tools', ...[BUILD, JEST, ...BACKGROUND.flat()].map(([name]) => name)];
process.stdout.write('\nnpm test:\n');
for (const name of order) {
  const r = results.find((x) => x.name === name);
  if (r === undefined && name === 'system tools') continue;
  const state = r === undefined ? 'not run (the build failed)' : r.skipped ? 'not run (system tools missing, see above)' : r.code === 0 ? (name === 'system tools' ? `ok, ${leftOut.size} left out` : 'ok') : `FAILED, exit ${r.code}${r.why ? ` (${r.why})` : ''}`;
  process.stdout.write(`  ${name.padEnd(20)} ${r === undefined ? '' : `${r.seconds.toFixed(1).padStart(6)} s  `}${state}\n`);
}
process.stdout.write(`  ${'total'.padEnd(20)} ${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s\n`);
const failed = results.find((r) => r.code !== 0);
if (failed !== undefined && process.exitCode === undefined) process.exitCode = failed.code;
