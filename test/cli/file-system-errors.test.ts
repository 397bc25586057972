// Issue 18, causes 5 and 6, against the built bundle: special files are
// refused without being read (a FIFO once blocked every command for good,
// and `run` with it, deaf to SIGTERM; /dev/zero filled memory), and a state
// dir, runtime dir or token file that is missing, of the wrong kind, a
// symbolic link loop, unreadable or unwritable is one line naming the path
// and the setting it came from, exit 78, in every command: never "internal
// error", never a lost pairing, never credentials deleted unread.
//
// Tests run as root, which reads anything: the permission cases drop to
// nobody (uid 65534) with setpriv and are skipped where that is not possible.
// A read-only or full file system cannot be staged here: pair's check of those
// is tested with an injected EROFS and ENOSPC in pair-preflight.test.ts.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeCloud, type FakeCloud } from '../fake-cloud/index.js';
import { buildBundle, type Bundle } from './bundle.js';
import { until } from '../support/until.js';

const NOBODY = 65534;
const canDropToNobody = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;
const asNobodyIt = canDropToNobody ? it : it.skip;

let bundle: Bundle;
let work: string;
let config: string;
beforeAll(async () => {
  bundle = await buildBundle();
  // nobody must be able to run the bundle and read the empty config.
  chmodSync(bundle.dir, 0o755);
  work = mkdtempSync(path.join(tmpdir(), 'c2c-fs-errors-'));
  chmodSync(work, 0o755);
  config = path.join(work, 'empty-config.json');
  writeFileSync(config, '{}\n', { mode: 0o644 });
}, 60_000);
afterAll(() => {
  bundle?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

interface Result {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface RunOpts {
  env?: Record<string, string>;
  asNobody?: boolean;
  /** For `run`: called once the child is spawned; resolves when the test is done with it (the child then gets SIGTERM). */
  /** Runs beside the process, given its stdout so far; SIGTERM once it resolves. */
  whileRunning?: (stdout: () => string) => Promise<unknown>;
}

/** The bundle as a child process; a child still alive after 30 s is killed (status null), which fails the test's exit code check. */
function agent(args: string[], opts: RunOpts = {}): Promise<Result> {
  const [cmd, argv] = opts.asNobody
    ? ['setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, bundle.file, ...args]]
    : [process.execPath, [bundle.file, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd as string, argv as string[], {
      cwd: work,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', C2C_CONFIG: config, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    void opts.whileRunning?.(() => stdout).then(() => child.kill('SIGTERM'));
    child.once('error', reject);
    child.once('close', (status, signal) => {
      clearTimeout(killer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

/** Exit code and the one line on stderr: the contract for every failure. */
function failure(r: Result): { status: number | null; line: string } {
  const lines = r.stderr.trimEnd().split('\n');
  expect({ stderrLines: lines.length, stderr: r.stderr.slice(0, 2000) }).toEqual({ stderrLines: 1, stderr: expect.any(String) });
  expect(r.stderr).not.toMatch(/internal error|please report/);
  return { status: r.status, line: lines[0] ?? '' };
}

let n = 0;
/** A fresh directory under the suite's work dir. */
function fresh(name: string): string {
  const dir = path.join(work, `${name}-${++n}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function mkfifo(file: string): string {
  const r = spawnSync('mkfifo', [file]);
  if (r.status !== 0) throw new Error(`mkfifo ${file}: ${r.stderr.toString()}`);
  return file;
}

/** The kinds of bad state dir the findings list, each made fresh. */
const BAD_STATE_DIRS: Array<[string, () => string, RegExp]> = [
  ['a regular file', () => {
    const f = path.join(fresh('file-parent'), 'state');
    writeFileSync(f, '');
    return f;
  }, /^c2c-agent: state dir '[^']+' \(from --state-dir\) is a regular file, not a directory/],
  ['a symbolic link loop', () => {
    const d = fresh('loop');
    symlinkSync(path.join(d, 'b'), path.join(d, 'a'));
    symlinkSync(path.join(d, 'a'), path.join(d, 'b'));
    return path.join(d, 'a');
  }, /^c2c-agent: cannot use the state dir '[^']+' \(from --state-dir\): has too many levels of symbolic links \(a loop\) \(ELOOP\)/],
  ['/dev/null', () => '/dev/null', /^c2c-agent: state dir '\/dev\/null' \(from --state-dir\) is a character device, not a directory/],
];

describe('queue', () => {
  it.each(BAD_STATE_DIRS)('state dir %s: exit 78, one line naming it and --state-dir', async (_kind, make, line) => {
    const f = failure(await agent(['queue', '--state-dir', make()]));
    expect(f).toEqual({ status: 78, line: expect.stringMatching(line) });
  });

  it('a missing state dir: an empty queue, exit 0', async () => {
    const r = await agent(['queue', '--state-dir', path.join(work, 'never-made'), '--runtime-dir', fresh('rt')]);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toContain('empty');
  });

  it('queue/ being a file: exit 78 naming the queue directory and where the state dir came from', async () => {
    const state = fresh('state');
    writeFileSync(path.join(state, 'queue'), '');
    const f = failure(await agent(['queue', '--state-dir', state], { env: { C2C_STATE_DIR: state } }));
    expect(f).toEqual({ status: 78, line: `c2c-agent: queue directory '${state}/queue' (from <state-dir>/queue, the state dir from --state-dir) is a regular file, not a directory; point the setting at a directory` });
    const viaEnv = failure(await agent(['queue'], { env: { C2C_STATE_DIR: state } }));
    expect(viaEnv.line).toContain('the state dir from environment C2C_STATE_DIR');
  });

  it('a FIFO as a queue segment and as status.json: skipped and counted as corrupt, exit 0, nothing blocks', async () => {
    const state = fresh('state');
    mkdirSync(path.join(state, 'queue'));
    mkfifo(path.join(state, 'queue', 'seg-000001.log'));
    const rt = fresh('rt');
    mkfifo(path.join(rt, 'status.json'));
    const r = await agent(['queue', '--json', '--state-dir', state, '--runtime-dir', rt]);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, quarantined: 1, daemonRunning: false });
  });

  asNobodyIt('an unreadable state dir (another user\'s, 0700): exit 78, permission denied, naming --state-dir', async () => {
    const state = fresh('private');
    mkdirSync(path.join(state, 'queue'));
    chmodSync(state, 0o700);
    const f = failure(await agent(['queue', '--state-dir', state], { asNobody: true }));
    expect(f.status).toBe(78);
    expect(f.line).toMatch(/\(from (<state-dir>\/queue, the state dir from )?--state-dir\): permission denied \(EACCES\)/);
  });
});

describe('unpair', () => {
  it.each(BAD_STATE_DIRS)('state dir %s: exit 78, one line naming --state-dir', async (_kind, make) => {
    const f = failure(await agent(['unpair', '--state-dir', make(), '--runtime-dir', fresh('rt')]));
    expect(f.status).toBe(78);
    expect(f.line).toMatch(/credentials file '[^']+' \(from <state-dir>\/credentials\.json, the state dir from --state-dir\)/);
  });

  it('credentials.json being a directory: exit 78 naming it, nothing deleted', async () => {
    const state = fresh('state');
    mkdirSync(path.join(state, 'credentials.json'));
    const f = failure(await agent(['unpair', '--state-dir', state, '--runtime-dir', fresh('rt')]));
    expect(f).toEqual({ status: 78, line: expect.stringContaining(`credentials file '${state}/credentials.json' (from <state-dir>/credentials.json, the state dir from --state-dir) is a directory, not a regular file`) });
    expect(statSync(path.join(state, 'credentials.json')).isDirectory()).toBe(true);
  });

  it('a FIFO as --token-file: exit 78 at once, the FIFO left alone', async () => {
    const fifo = mkfifo(path.join(fresh('tok'), 'credentials.json'));
    const f = failure(await agent(['unpair', '--token-file', fifo, '--state-dir', fresh('state'), '--runtime-dir', fresh('rt')]));
    expect(f).toEqual({ status: 78, line: `c2c-agent: credentials file '${fifo}' (from --token-file) is a FIFO (named pipe), not a regular file; point the setting at a regular file` });
    expect(statSync(fifo).isFIFO()).toBe(true);
  });

  asNobodyIt('credentials it cannot read: one line, exit 78, and the file is NOT deleted (it once said "nothing to revoke" and deleted it)', async () => {
    const state = fresh('state');
    chownSync(state, NOBODY, NOBODY);
    const creds = path.join(state, 'credentials.json');
    writeFileSync(creds, JSON.stringify({ access_token: 'fca_unreadable_token_0001', refresh_token: 'fcr_unreadable_token_0001' }), { mode: 0o600 });
    const r = await agent(['unpair', '--state-dir', state, '--runtime-dir', fresh('rt')], { asNobody: true });
    const f = failure(r);
    expect(f.status).toBe(78);
    expect(f.line).toContain(`cannot read the credentials file '${creds}'`);
    expect(f.line).toContain('permission denied (EACCES)');
    expect(r.stdout + r.stderr).not.toContain('unreadable_token');
    expect(existsSync(creds)).toBe(true);
  });

  it('a missing state dir: nothing to revoke, nothing to forget, exit 0', async () => {
    const r = await agent(['unpair', '--state-dir', path.join(work, 'never-made-either'), '--runtime-dir', fresh('rt')]);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toContain('nothing to revoke');
  });
});

describe('status', () => {
  it.each([
    ['a regular file', () => {
      const f = path.join(fresh('rt-parent'), 'rt');
      writeFileSync(f, '');
      return f;
    }],
    ['/dev/null', () => '/dev/null'],
  ])('runtime dir %s: exit 78 naming the API socket and --runtime-dir', async (_kind, make) => {
    const f = failure(await agent(['status', '--runtime-dir', make()]));
    expect(f.status).toBe(78);
    expect(f.line).toMatch(/^c2c-agent: cannot connect to the daemon's API at '[^']+\/api\.sock' \(from --runtime-dir\): a part of the path is not a directory \(ENOTDIR\)/);
  });

  it('a FIFO as status.json: exit 78 at once', async () => {
    const rt = fresh('rt');
    mkfifo(path.join(rt, 'status.json'));
    const f = failure(await agent(['status', '--runtime-dir', rt]));
    expect(f).toEqual({ status: 78, line: `c2c-agent: status file '${rt}/status.json' (from --runtime-dir) is a FIFO (named pipe), not a regular file; point the setting at a regular file` });
  });

  it('a FIFO or /dev/zero as --config, and as the config\'s firmwareVersionFile: exit 78 at once', async () => {
    const fifo = mkfifo(path.join(fresh('cfg'), 'config.json'));
    for (const file of [fifo, '/dev/zero']) {
      const f = failure(await agent(['status', '--config', file]));
      expect(f).toEqual({ status: 78, line: expect.stringMatching(new RegExp(`^c2c-agent: config file '${file}' \\(from --config\\) is a (FIFO \\(named pipe\\)|character device), not a regular file`)) });
    }
    const dir = fresh('cfg');
    const fwFifo = mkfifo(path.join(dir, 'version'));
    for (const fw of [fwFifo, '/dev/urandom']) {
      const cfg = path.join(dir, `config-${path.basename(fw)}.json`);
      writeFileSync(cfg, JSON.stringify({ firmwareVersionFile: fw }));
      const f = failure(await agent(['status', '--config', cfg]));
      expect(f.status).toBe(78);
      expect(f.line).toMatch(new RegExp(`^c2c-agent: firmware version file '${fw}' \\(from config ${cfg} key firmwareVersionFile\\) is a (FIFO|character device)`));
    }
  });
});

describe('status: "cannot read the runtime dir" is not "no daemon runs"', () => {
  asNobodyIt('a runtime dir this user cannot enter: exit 78 with advice, never 69', async () => {
    const rt = fresh('rt-private');
    writeFileSync(path.join(rt, 'status.json'), '{}');
    chmodSync(rt, 0o700);
    const f = failure(await agent(['status', '--runtime-dir', rt], { asNobody: true }));
    expect(f).toEqual({ status: 78, line: `c2c-agent: cannot connect to the daemon's API at '${rt}/api.sock' (from --runtime-dir): permission denied (EACCES); run as the agent's user or fix the owner and mode, or add this user to the agent's group (docs/local-api.md, "Who may connect")` });
  });
});

describe('upload', () => {
  it.each(BAD_STATE_DIRS)('state dir %s: exit 78, one line, nothing queued', async (_kind, make) => {
    const clip = path.join(fresh('clips'), 'a.mp4');
    writeFileSync(clip, 'clip');
    const f = failure(await agent(['upload', clip, '--state-dir', make(), '--runtime-dir', fresh('rt'), '--upload-roots', path.dirname(clip)]));
    expect(f.status).toBe(78);
    expect(f.line).toMatch(/^c2c-agent: (state dir|cannot use the state dir|cannot list the queue directory|queue directory)/);
  });

  asNobodyIt('a state dir this user cannot read: exit 78, permission denied', async () => {
    const state = fresh('private-state');
    mkdirSync(path.join(state, 'queue'));
    chmodSync(state, 0o700);
    const clips = fresh('clips');
    chmodSync(clips, 0o755);
    const clip = path.join(clips, 'b.mp4');
    writeFileSync(clip, 'clip', { mode: 0o644 });
    const rt = fresh('rt');
    chmodSync(rt, 0o777);
    const f = failure(await agent(['upload', clip, '--state-dir', state, '--runtime-dir', rt, '--upload-roots', clips], { asNobody: true }));
    expect(f.status).toBe(78);
    expect(f.line).toContain('permission denied (EACCES)');
  });
});

describe('check and channels', () => {
  it('a FIFO or /dev/zero as credentials.json or --token-file: exit 78 at once (check)', async () => {
    const state = fresh('state');
    mkfifo(path.join(state, 'credentials.json'));
    const viaState = failure(await agent(['check', '--api-url', 'http://127.0.0.1:9', '--state-dir', state]));
    expect(viaState).toEqual({ status: 78, line: expect.stringContaining(`credentials file '${state}/credentials.json' (from <state-dir>/credentials.json, the state dir from --state-dir) is a FIFO`) });
    const viaOption = failure(await agent(['check', '--api-url', 'http://127.0.0.1:9', '--token-file', '/dev/zero']));
    expect(viaOption).toEqual({ status: 78, line: expect.stringContaining("credentials file '/dev/zero' (from --token-file) is a character device") });
  });

  it('a FIFO as a profile in --profiles-dir: exit 78 at once (check, profiles)', async () => {
    const dir = fresh('profiles');
    mkfifo(path.join(dir, 'cam.json'));
    for (const args of [['check', '--api-url', 'http://127.0.0.1:9'], ['profiles']]) {
      const f = failure(await agent([...args, '--profiles-dir', dir]));
      expect(f).toEqual({ status: 78, line: `c2c-agent: firmware profile '${dir}/cam.json' (from --profiles-dir) is a FIFO (named pipe), not a regular file; point the setting at a regular file` });
    }
  });

  it.each(BAD_STATE_DIRS)('channels with a state dir that is %s: exit 78 naming --state-dir', async (_kind, make, line) => {
    const f = failure(await agent(['channels', '--state-dir', make(), '--runtime-dir', fresh('rt'), '--host-root', fresh('host')]));
    expect(f).toEqual({ status: 78, line: expect.stringMatching(line) });
  });
});

describe('run: refuses what it cannot use at start-up (exit 78), never blocks, honours SIGTERM', () => {
  const runArgs = (state: string, rt: string): string[] => ['run', '--api-url', 'http://127.0.0.1:9', '--state-dir', state, '--runtime-dir', rt];

  it.each(BAD_STATE_DIRS)('state dir %s: exit 78 before the daemon starts', async (_kind, make, line) => {
    const f = failure(await agent(runArgs(make(), fresh('rt')), { env: { C2C_TOKEN: 'fca_env_token_for_run_0001' } }));
    expect(f).toEqual({ status: 78, line: expect.stringMatching(line) });
  });

  it('queue/ being a file: exit 78 (it once ran without its queue)', async () => {
    const state = fresh('state');
    writeFileSync(path.join(state, 'queue'), '');
    const f = failure(await agent(runArgs(state, fresh('rt')), { env: { C2C_TOKEN: 'fca_env_token_for_run_0001' } }));
    expect(f.status).toBe(78);
    expect(f.line).toContain(`queue directory '${state}/queue'`);
  });

  it('a FIFO as --config, firmwareVersionFile, a profile or credentials.json: exit 78, no signal needed', async () => {
    const dir = fresh('fifos');
    const configFifo = mkfifo(path.join(dir, 'config.json'));
    const fwFifo = mkfifo(path.join(dir, 'version'));
    const fwConfig = path.join(dir, 'fw-config.json');
    writeFileSync(fwConfig, JSON.stringify({ firmwareVersionFile: fwFifo }));
    const profiles = fresh('profiles');
    mkfifo(path.join(profiles, 'cam.json'));
    const stateWithFifo = fresh('state');
    mkfifo(path.join(stateWithFifo, 'credentials.json'));
    const cases: Array<[string, string[], string]> = [
      [fresh('state'), ['--config', configFifo], 'config file'],
      [fresh('state'), ['--config', fwConfig], 'firmware version file'],
      [fresh('state'), ['--profiles-dir', profiles], 'firmware profile'],
      [stateWithFifo, [], 'credentials file'],
    ];
    for (const [state, extra, what] of cases) {
      const r = await agent([...runArgs(state, fresh('rt')), ...extra]);
      const f = failure(r);
      expect({ what, status: f.status, signal: r.signal }).toEqual({ what, status: 78, signal: null });
      // daemon/main.ts loads the profiles without naming --profiles-dir: the path alone names the profile there.
      expect(f.line).toMatch(new RegExp(`^c2c-agent: ${what} '[^']+' (\\(from [^)]+\\) )?is a FIFO \\(named pipe\\), not a regular file`));
    }
  });

  it('FIFOs as run.lock, last-heartbeat.json, a queue segment and uploaded.json: the daemon starts, and SIGTERM stops it (exit 0)', async () => {
    const state = fresh('state');
    const rt = fresh('rt');
    mkdirSync(path.join(state, 'queue'));
    mkfifo(path.join(state, 'queue', 'seg-000001.log'));
    mkfifo(path.join(state, 'uploaded.json'));
    mkfifo(path.join(rt, 'run.lock'));
    mkfifo(path.join(rt, 'last-heartbeat.json'));
    const media = fresh('media');
    // A clip, so the upload pipeline (loaded on first use, issue 30) loads and reads its index.
    writeFileSync(path.join(media, 'clip.mp4'), 'x'.repeat(1000));
    const statusFile = path.join(rt, 'status.json');
    // Done with the daemon once it has published a state past start-up and read the upload index: it got past every FIFO.
    const pastStart = (stdout: string): boolean => {
      try {
        const s = JSON.parse(readFileSync(statusFile, 'utf8')) as { state?: string };
        return s.state !== undefined && s.state !== 'starting' && stdout.includes("upload index '");
      } catch {
        return false; // not written yet
      }
    };
    // 20 real s: a bound against a hang (a FIFO waited on); the assertions below say what went wrong.
    const started = (stdout: () => string): Promise<unknown> => until('a state past start-up, the upload index read', () => pastStart(stdout()), { everyMs: 50, hangMs: 20_000 }).catch(() => undefined);
    // The clip settles in 0.5 real s (10 agent s at scale 20; the API URL is loopback).
    const r = await agent([...runArgs(state, rt), '--media-dir', media, '--time-scale', '20'], { env: { C2C_TOKEN: 'fca_env_token_for_run_0001' }, whileRunning: started });
    expect({ status: r.status, signal: r.signal, sawStatus: existsSync(statusFile) }).toEqual({ status: 0, signal: null, sawStatus: true });
    // The FIFO segment was moved aside like a corrupt one, not waited on.
    expect(readdirSync(path.join(state, 'queue', 'quarantine'))).toEqual(['seg-000001.log']);
    expect(r.stdout).toContain('corrupt segment moved aside');
    expect(r.stdout).toContain("upload index '");
    // Uploads are off until restart, and nothing that finds a clip meanwhile reaches the unread index.
    expect(r.stdout).not.toContain('unhandled rejection');
    expect(r.stdout).not.toContain('failed to stop cleanly');
    expect(r.stdout).not.toContain('fca_env_token_for_run_0001');
  });
});

describe('pair: never loses an approved pairing to the state dir', () => {
  let cloud: FakeCloud;
  let secret: string;
  beforeAll(async () => {
    cloud = await startFakeCloud({ timeScale: 40, devices: 0, autoApproveSeconds: 1 });
    secret = path.join(fresh('secret'), 'client.secret');
    writeFileSync(secret, cloud.clientSecret, { mode: 0o600 });
    // nobody reads it in the permission case; still 0600, as pair demands.
    chownSync(secret, NOBODY, NOBODY);
  });
  afterAll(async () => {
    await cloud?.close();
  });

  const pairArgs = (state: string, clientId: string): string[] => [
    'pair', '--json', '--api-url', cloud.url, '--time-scale', '40', '--client-secret-file', secret, '--client-id', clientId, '--state-dir', state, '--runtime-dir', fresh('rt'), '--timeout', '60',
  ];
  const codeRequests = (): number => cloud.journal.filter((e) => e.path === '/v2/auth/device/code').length;

  it.each(BAD_STATE_DIRS)('state dir %s: exit 78 and the service is never asked for a code', async (_kind, make, line) => {
    const before = codeRequests();
    const f = failure(await agent(pairArgs(make(), `fs-bad-${n}`)));
    expect(f).toEqual({ status: 78, line: expect.stringMatching(line) });
    expect(codeRequests()).toBe(before);
  });

  it('credentials.json being a directory: exit 78 before any network call', async () => {
    const state = fresh('state');
    mkdirSync(path.join(state, 'credentials.json'));
    const before = codeRequests();
    const f = failure(await agent(pairArgs(state, 'fs-creds-dir')));
    expect(f).toEqual({ status: 78, line: expect.stringContaining(`credentials file '${state}/credentials.json'`) });
    expect(f.line).toContain('is a directory, not a regular file');
    expect(codeRequests()).toBe(before);
  });

  asNobodyIt('a state dir this user cannot write: exit 78 (EACCES) before any network call', async () => {
    const state = fresh('roots');
    chmodSync(state, 0o755);
    const before = codeRequests();
    const f = failure(await agent(pairArgs(state, 'fs-unwritable'), { asNobody: true }));
    expect(f.status).toBe(78);
    expect(f.line).toBe(`c2c-agent: cannot write in the state dir (where the credentials will be stored) '${state}' (from --state-dir): permission denied (EACCES); run as the agent's user or fix the owner and mode`);
    expect(codeRequests()).toBe(before);
    expect(readdirSync(state)).toEqual([]);
  });

  it('a missing state dir is made (0700) before the code is asked for, and the approved pairing is stored in it', async () => {
    const state = path.join(work, `new-parent-${++n}`, 'state');
    const r = await agent(pairArgs(state, 'fs-missing-dir'));
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(statSync(state).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(path.join(state, 'credentials.json'), 'utf8'))).toMatchObject({ access_token: expect.stringMatching(/^fca_/) });
    expect(readdirSync(state)).toEqual(['credentials.json']);
  });
});
