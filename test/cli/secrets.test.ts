// No secret in any output, at any log level (docs/commands.md): every
// command runs with --log-level trace in scenarios that carry tokens and a
// client secret, on success and failure paths, and its stdout and stderr are
// searched for every secret the fake cloud issued. For `run`, so are the
// files it leaves in the runtime dir (status.json, last-heartbeat.json,
// run.lock), both while it runs and after it stops or is killed with -9.
//
// Table-driven: a new command gets a row in COMMANDS; a new way of holding
// secrets gets a row in SCENARIOS; a new failure path gets a row in FAULTS.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeCloud, type FakeCloud, type Fault } from '../fake-cloud/index.js';
import { buildBundle, type Bundle } from './bundle.js';
import { runBundle } from './spawn.js';

const SCALE = 100;
let cloud: FakeCloud;
let bundle: Bundle;
let work: string;
let n = 0;

beforeAll(async () => {
  [cloud, bundle] = await Promise.all([startFakeCloud({ devices: 2, timeScale: SCALE }), buildBundle()]);
  work = mkdtempSync(path.join(tmpdir(), 'c2c-secrets-'));
}, 60_000);
afterAll(async () => {
  await cloud?.close();
  bundle?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

/** Every secret the agent could hold in these scenarios. */
function secrets(): string[] {
  return [cloud.clientSecret, ...cloud.devices.flatMap((d) => [d.accessToken, d.refreshToken, d.clientSecret]), REJECTED_TOKEN];
}
const REJECTED_TOKEN = 'fca_secret_but_rejected_by_the_fake';

interface Scenario {
  name: string;
  env: (dir: string) => Record<string, string>;
}

function writeCredentials(dir: string, device = 1): string {
  const d = cloud.devices[device]!;
  const file = path.join(dir, 'credentials.json');
  writeFileSync(file, JSON.stringify({ access_token: d.accessToken, refresh_token: d.refreshToken, expires_at: '2099-01-01T00:00:00Z', token_type: 'bearer' }), { mode: 0o600 });
  return file;
}

const SCENARIOS: Scenario[] = [
  { name: 'C2C_TOKEN', env: () => ({ C2C_TOKEN: cloud.devices[0]!.accessToken }) },
  { name: 'a rejected C2C_TOKEN', env: () => ({ C2C_TOKEN: REJECTED_TOKEN }) },
  { name: 'token file with refresh token', env: (dir) => ({ C2C_TOKEN_FILE: writeCredentials(dir) }) },
  {
    name: 'token file and client secret file',
    env: (dir) => {
      const secretFile = path.join(dir, 'client-secret');
      writeFileSync(secretFile, `${cloud.clientSecret}\n`, { mode: 0o600 });
      return { C2C_TOKEN_FILE: writeCredentials(dir), C2C_CLIENT_SECRET_FILE: secretFile };
    },
  },
];

const FAULTS: { name: string; fault?: Fault }[] = [
  { name: 'no fault' },
  { name: '401', fault: { kind: 'status', status: 401 } },
  { name: '500', fault: { kind: 'status', status: 500 } },
  { name: 'malformed JSON', fault: { kind: 'malformed-json' } },
];

interface CommandRow {
  args: string[];
  /** Talks to the service: worth running under every fault, and its trace log must show the requests. */
  network?: boolean;
  /** For long-running commands: when to send SIGTERM. */
  stopAfter?: (runDir: string) => Promise<unknown>;
  /** Kill -9 instead (a crash as far as the runtime dir can tell): what it leaves behind is searched too. */
  kill9?: boolean;
}

/** Every file in the runtime dir, name to content; a temp file renamed between the listing and the read is skipped, and so is the local API's socket (nothing to read; what it answers is checked in test/integration/local-api.test.ts). */
function runtimeFiles(dir: string): Record<string, string> {
  if (!existsSync(dir)) return {};
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isSocket()) continue;
    const name = entry.name;
    try {
      out[name] = readFileSync(path.join(dir, name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return out;
}

/**
 * Resolves once the fake has seen `count` more requests, or after `ms` real ms once the daemon
 * holds its run lock (on a loaded machine node alone can take longer than `ms` to start), or after
 * 15 real s whatever happened.
 */
function requestsOrTimeout(count: number, ms: number, runDir: string): Promise<void> {
  const start = cloud.journal.length;
  return new Promise((resolve) => {
    // `ms` counts from the moment the run lock is seen: a node that took longer than `ms` to start
    // would otherwise be stopped before its first request.
    let lockedAt: number | undefined;
    const giveUp = Date.now() + 15_000;
    const poll = setInterval(() => {
      if (lockedAt === undefined && existsSync(path.join(runDir, 'run.lock'))) lockedAt = Date.now();
      const late = (lockedAt !== undefined && Date.now() > lockedAt + ms) || Date.now() > giveUp;
      // And the status file written once: it is one of the files searched for secrets, and its first
      // write (temp, rename) may still be on its way when the first heartbeat has gone.
      const written = existsSync(path.join(runDir, 'status.json'));
      if ((cloud.journal.length - start >= count && written) || late) {
        clearInterval(poll);
        resolve();
      }
    }, 20);
  });
}

const COMMANDS: CommandRow[] = [
  { args: ['check'], network: true },
  { args: ['check', '--json'], network: true },
  { args: ['profiles'] },
  { args: ['profiles', '--json'] },
  { args: ['status', '--json'] },
  { args: ['--help'] },
  // The daemon: a start-up check and a heartbeat or two, then SIGTERM.
  { args: ['run'], network: true, stopAfter: (runDir) => requestsOrTimeout(2, 1000, runDir) },
  { args: ['run'], network: true, stopAfter: (runDir) => requestsOrTimeout(2, 1000, runDir), kill9: true },
];

const cases = COMMANDS.flatMap((c) =>
  SCENARIOS.flatMap((s) =>
    (c.network && !c.kill9 ? FAULTS : FAULTS.slice(0, 1)).map((f) => ({ c, s, f, label: `${c.args.join(' ')}${c.kill9 ? ' (kill -9)' : ''} | ${s.name} | ${f.name}` })),
  ),
);

describe('no secret in stdout or stderr at --log-level trace', () => {
  test.each(cases)('$label', async ({ c, s, f }) => {
    const dir = path.join(work, `case-${n++}`);
    mkdirSync(dir);
    const handle = f.fault ? cloud.control.addFault(f.fault) : undefined;
    const runDir = path.join(dir, 'run');
    let live: Record<string, string> = {};
    // Before the SIGTERM: the files of a running daemon, run.lock included (and its pid, for the kill -9 rows).
    const stopWhen = c.stopAfter?.(runDir).then(() => {
      live = runtimeFiles(runDir);
      const owner = live['run.lock'] === undefined ? undefined : (JSON.parse(live['run.lock']) as { pid: number });
      if (c.kill9 && owner) process.kill(owner.pid, 'SIGKILL');
    });
    try {
      const r = await runBundle(bundle.file, [...c.args, '--log-level', 'trace'], {
        env: { C2C_API_URL: cloud.url, C2C_STATE_DIR: path.join(dir, 'state'), C2C_RUNTIME_DIR: runDir, C2C_TIME_SCALE: String(SCALE), ...s.env(dir) },
        ...(stopWhen ? { stopWhen } : {}),
      });
      if (c.args[0] === 'run') {
        expect(Object.keys(live)).toContain('run.lock');
        const left = runtimeFiles(runDir);
        expect(Object.keys(left)).toContain('status.json');
        if (c.kill9) expect(r.signal).toBe('SIGKILL');
        for (const [name, text] of [...Object.entries(live), ...Object.entries(left)]) {
          for (const secret of secrets()) expect({ name, found: text.includes(secret) }).toEqual({ name, found: false });
        }
      }
      const out = r.stdout + r.stderr;
      // The command really ran, and at trace level the requests were logged in detail.
      expect(out.length).toBeGreaterThan(0);
      if (c.network) expect(out).toContain('"msg":"http detail"');
      for (const secret of secrets()) expect(out).not.toContain(secret);
      // Not even a recognisable fragment of a bearer header.
      expect(out).not.toMatch(/Bearer\s+fc[a-z]_/);
    } finally {
      handle?.remove();
    }
  });
});
