// Fuzz target "answers": the agent's commands against a hostile service.
// Each case draws one command (check, pair, unpair, or a daemon run for a few
// real seconds at a high --time-scale) and a hostile server whose answer to
// each request is drawn per endpoint (hostile-answers.mjs). Oracles: the
// documented exit codes and output shapes (oracles.mjs), the exit code that
// fits the answer check got, no credentials kept unless pairing was verified,
// a daemon that stays up, stops with 0 on SIGTERM, keeps no dead sockets,
// never heartbeats under 60 agent seconds apart and never gives up on an
// upload the service only asked it to retry.
import { chmodSync, existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startHostileServer } from './hostile-server.mjs';
import { checkExits, drawAnswer, retryable, routeOf, World } from './hostile-answers.mjs';
import { cliProblems, firstLine, jsonOf, leakedSecret, problem } from './oracles.mjs';
import { STOP_HANG_MS, openFds, pollUntil, rssMiB, run, sleep, start, within } from './proc.mjs';

/** Agent ms of the service's request cut-off (docs/service-api.md, "Limits"; agent/lib/timing.ts REQUEST_TIMEOUT_MS). */
const REQUEST_CUTOFF_MS = 30_000;
/** Real ms a process gets beyond its own longest legitimate wait: node's start, a loaded machine. */
const MARGIN_MS = 6_000;
/** The time scale of the one-shot commands: 30 s of agent time is one real second. */
const CLI_SCALE = 30;
/** A kept-alive socket unused this long (real ms) is one the agent should have closed (agent/api/transport.ts IDLE_SOCKET_MS is 4 s); a leak is one that stays (see daemonCase). */
const STALE_SOCKET_MS = 5_500;
const FIRMWARE = '1.6.0'; // multi-av-tc (firmware-profiles/multi-av-tc.json): channel 'video' at dev/video0

/** The case's dirs, files and environment: state with credentials, a client secret, a hardware tree. */
function makeRig(tmp, world, server, rng, o = {}) {
  const dirs = { root: tmp, state: path.join(tmp, 'state'), run: path.join(tmp, 'run'), host: path.join(tmp, 'host'), media: path.join(tmp, 'media') };
  mkdirSync(dirs.state, { recursive: true, mode: 0o700 });
  mkdirSync(path.join(dirs.host, 'dev'), { recursive: true });
  writeFileSync(path.join(dirs.host, 'dev/video0'), '');
  writeFileSync(path.join(tmp, 'config.json'), '{}\n');
  const clientSecret = world.secret('fzcs');
  const secretFile = path.join(tmp, 'client-secret');
  writeFileSync(secretFile, `${clientSecret}\n`, { mode: 0o600 });
  chmodSync(secretFile, 0o600);
  const tokenFile = path.join(dirs.state, 'credentials.json');
  let tokens;
  if (o.credentials) {
    tokens = { access: world.secret('fzat'), refresh: world.secret('fzrt') };
    const now = Date.now();
    // A short lifetime (agent seconds) makes the daemon refresh within the case: the token endpoint's answers get fuzzed too.
    const lifetime = o.lifetimeS ?? 28800;
    const realMs = (lifetime * 1000) / (o.scale ?? CLI_SCALE);
    writeFileSync(
      tokenFile,
      JSON.stringify({ access_token: tokens.access, refresh_token: tokens.refresh, token_type: 'bearer', expires_in: lifetime, obtained_at: new Date(now).toISOString(), expires_at: new Date(now + realMs).toISOString(), clock: 'local' }),
      { mode: 0o600 },
    );
  }
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    C2C_CONFIG: path.join(tmp, 'config.json'),
    C2C_API_URL: server.url,
    C2C_STATE_DIR: dirs.state,
    C2C_RUNTIME_DIR: dirs.run,
    C2C_TIME_SCALE: String(o.scale ?? CLI_SCALE),
    C2C_CLIENT_SECRET_FILE: secretFile,
    C2C_CLIENT_ID: `fz-client-${rng.hex(8)}`,
    C2C_FIRMWARE_VERSION: FIRMWARE,
    C2C_HOST_ROOT: dirs.host,
  };
  if (server.caPem) {
    // Over TLS: the hostile server's throwaway CA, as a private deployment's is given.
    const caFile = path.join(tmp, 'fuzz-ca.pem');
    writeFileSync(caFile, server.caPem);
    env.C2C_CA_FILE = caFile;
  }
  return { dirs, env, tokenFile, tokens };
}

/**
 * The planner: each endpoint's n-th request gets the answer drawn from its own
 * stream of the case's PRNG, so a replay answers each endpoint the same
 * sequence however the agent's requests interleave.
 */
function planner(rng, world, mixFor) {
  const seen = new Map();
  return (req) => {
    const route = routeOf(req);
    const n = seen.get(route) ?? 0;
    seen.set(route, n + 1);
    const r = rng.fork(`${route}#${n}`);
    world.rng = r;
    return drawAnswer(r, world, route, req, mixFor(route));
  };
}

const answered = (server, route) => server.log.filter((e) => e.route === route);
const describeOutcome = (o) => `${o.kind}${o.slow ? '+slow' : ''}${o.huge ? '+huge' : ''}:${o.status}:${o.quality}`;
const statusClass = (s) => (s >= 200 && s < 300 ? '2xx' : s >= 300 && s < 400 ? '3xx' : s === 401 || s === 403 ? '401/403' : s === 429 ? '429' : s >= 500 && s < 600 ? '5xx' : s >= 400 && s < 500 ? '4xx' : `${s}`);

function redirectProblems(server, label) {
  const followed = answered(server, 'redirected');
  return followed.length === 0 ? [] : [problem('wrong', `${label}:followed-redirect`, `the agent followed a redirect to ${followed[0].path.slice(0, 80)}`)];
}

// ---- check ----------------------------------------------------------------------------

async function checkCase(ctx, world, server) {
  const { rng } = ctx;
  const useEnvToken = rng.chance(0.15);
  const rig = makeRig(ctx.tmp, world, server, rng, { credentials: !useEnvToken });
  if (useEnvToken) rig.env.C2C_TOKEN = world.secret('fzat');
  const json = rng.chance(0.85);
  const args = ['check', ...(json ? ['--json'] : [])];
  const timeoutMs = ((REQUEST_CUTOFF_MS + 10_000) / CLI_SCALE) + MARGIN_MS;
  const r = await run(process.execPath, [ctx.bundle, ...args], { env: rig.env, cwd: ctx.tmp, timeoutMs });
  const problems = cliProblems(r, { label: 'check', json: json ? 'object' : undefined, secrets: world.secrets });
  problems.push(...redirectProblems(server, 'check'));
  const me = answered(server, 'me')[0];
  const desc = [`c2c-agent ${args.join(' ')}${useEnvToken ? ' (C2C_TOKEN)' : ''}`, `GET /v2/devices/me -> ${me ? me.label : '(never asked)'}`, `/health -> ${answered(server, 'health').map((e) => e.label).join('; ') || '(not asked)'}`];
  if (!r.timedOut && !r.rssKilled && r.signal === null && r.code !== 1) {
    if (me === undefined) {
      if (r.code === 0) problems.push(problem('wrong', 'check:exit0-without-asking', 'exit 0 but GET /v2/devices/me never reached the service'));
    } else {
      const allowed = checkExits(me.outcome);
      if (!allowed.includes(r.code)) {
        const o = me.outcome;
        problems.push(problem('wrong', `check:exit${r.code}-for-${o.kind}${o.huge ? '+huge' : ''}-${statusClass(o.status)}-${o.quality}`, `exit ${r.code} (allowed ${allowed.join('/')}) for ${me.label}; stderr ${firstLine(r.stderr)}`));
      }
      if (r.code === 0 && json) {
        const v = jsonOf(r);
        if (v && (v.device === null || typeof v.device !== 'object' || typeof v.device.id !== 'string')) problems.push(problem('wrong', 'check:exit0-no-device', '--json ok without a device id'));
      }
    }
  }
  return { desc, problems, result: r };
}

// ---- pair -----------------------------------------------------------------------------

async function pairCase(ctx, world, server) {
  const { rng } = ctx;
  const rig = makeRig(ctx.tmp, world, server, rng);
  const timeoutS = rng.pick([15, 30, 60]);
  const args = ['pair', '--json', '--timeout', String(timeoutS)];
  // The last poll may start just before the deadline, then storing and GET /v2/devices/me: three cut-offs at most.
  const timeoutMs = ((timeoutS * 1000 + 3 * REQUEST_CUTOFF_MS) / CLI_SCALE) + MARGIN_MS;
  // Sometimes the person gives up: SIGTERM at any step after the code is shown must end it at once
  // with 143 and nothing stored (docs/commands.md, "Pairing").
  const termAt = rng.chance(0.2) ? rng.int(0, 1500) : undefined;
  let termTimer;
  let termSent; // the hostile server's clock (server.now()) when SIGTERM was sent
  const p = start(process.execPath, [ctx.bundle, ...args], {
    env: rig.env,
    cwd: ctx.tmp,
    timeoutMs,
    onData: (which) => {
      if (termAt === undefined || which !== 'stdout' || termTimer !== undefined) return;
      termTimer = setTimeout(() => {
        termSent = server.now();
        p.signal('SIGTERM');
      }, termAt);
    },
  });
  const r = await p.done;
  clearTimeout(termTimer);
  const problems = cliProblems(r, { label: 'pair', json: 'lines', secrets: world.secrets, extraExits: termSent === undefined ? [] : [143] });
  // SIGTERM ends the token polls, judged by what reached the service, not by a real-time window a loaded
  // machine stalls: polls go one at a time (each waits for its answer), so at most two can reach the service
  // after the signal was sent: one already on its way, and one its timer started in the same turn of the
  // agent's event loop as the signal was read. More is a pair that went on polling. (A hang is the case's
  // deadline; the exit code and nothing stored are cliProblems' and the checks below.)
  if (termSent !== undefined) {
    const after = answered(server, 'poll').filter((e) => e.t > termSent).length;
    if (after > 2) problems.push(problem('wrong', 'pair:polls-after-sigterm', `${after} token polls reached the service after SIGTERM (exit ${r.code ?? r.signal})`));
  }
  problems.push(...redirectProblems(server, 'pair'));
  const me = answered(server, 'me');
  const last = me[me.length - 1];
  const desc = [
    `c2c-agent ${args.join(' ')}${termAt === undefined ? '' : ` (SIGTERM ${termAt} ms after its first line)`}`,
    `device/code -> ${answered(server, 'code').map((e) => e.label).slice(0, 4).join('; ') || '(never asked)'}`,
    `token polls: ${answered(server, 'poll').length}, last -> ${answered(server, 'poll').slice(-1)[0]?.label ?? '(none)'}`,
    `GET /v2/devices/me -> ${me.map((e) => e.label).join('; ') || '(never asked)'}`,
  ];
  const stored = existsSync(rig.tokenFile);
  if (!r.timedOut && !r.rssKilled && r.signal === null) {
    if (r.code !== 0 && stored) {
      // agent/cli/pair.ts keeps a grant it could not verify only when the last failure was temporary (the
      // network, a 5xx, a 429: exit 69 or 75), and says so: the service revoked the unit's previous tokens
      // when it issued these. Refused, or met with an answer that is not the service's, it stores nothing.
      const keptAndSaid = (r.code === 69 || r.code === 75) && /credentials are stored/.test(r.stderr);
      if (!keptAndSaid) problems.push(problem('wrong', 'pair:stored-unverified', `exit ${r.code} but ${path.basename(rig.tokenFile)} was written (verification: ${last ? last.label : 'never asked'})`));
    }
    if (r.code === 0) {
      if (!stored) problems.push(problem('wrong', 'pair:exit0-nothing-stored', 'exit 0 but no credentials file'));
      else {
        let token;
        try {
          token = JSON.parse(readFileSync(rig.tokenFile, 'utf8')).access_token;
        } catch {
          token = undefined;
        }
        if (!world.secrets.has(token)) problems.push(problem('wrong', 'pair:exit0-foreign-token', 'exit 0 but the stored access token is none the service granted'));
      }
      if (last === undefined) problems.push(problem('wrong', 'pair:exit0-unverified', 'exit 0 without GET /v2/devices/me'));
      else if (!['answer', 'odd'].includes(last.outcome.kind) || last.outcome.status < 200 || last.outcome.status > 299 || last.outcome.quality === 'bad') {
        problems.push(problem('wrong', `pair:exit0-unverified-${last.outcome.kind}-${statusClass(last.outcome.status)}-${last.outcome.quality}`, `exit 0 although verification got ${last.label}`));
      }
    } else if (last !== undefined && last.outcome.kind === 'answer' && !last.outcome.slow && last.outcome.status >= 200 && last.outcome.status < 300 && last.outcome.quality === 'ok') {
      problems.push(problem('wrong', 'pair:verified-but-failed', `exit ${r.code} although verification got ${last.label}; stderr ${firstLine(r.stderr)}`));
    }
  }
  return { desc, problems, result: r };
}

// ---- unpair ---------------------------------------------------------------------------

async function unpairCase(ctx, world, server) {
  const { rng } = ctx;
  const rig = makeRig(ctx.tmp, world, server, rng, { credentials: true });
  const args = ['unpair', '--json'];
  const timeoutMs = 10_000 / CLI_SCALE + MARGIN_MS;
  const r = await run(process.execPath, [ctx.bundle, ...args], { env: rig.env, cwd: ctx.tmp, timeoutMs });
  const problems = cliProblems(r, { label: 'unpair', json: 'object', secrets: world.secrets });
  problems.push(...redirectProblems(server, 'unpair'));
  const revoke = answered(server, 'revoke')[0];
  const desc = [`c2c-agent ${args.join(' ')}`, `POST /v2/auth/revoke -> ${revoke ? revoke.label : '(never asked)'}`];
  if (!r.timedOut && !r.rssKilled && r.signal === null && r.code !== 1) {
    if (r.code !== 0) problems.push(problem('wrong', `unpair:exit${r.code}`, `unpair must forget locally and exit 0 whatever the service says; got ${r.code}: ${firstLine(r.stderr)}`));
    if (existsSync(rig.tokenFile)) problems.push(problem('wrong', 'unpair:credentials-kept', 'the credentials file is still there'));
    const v = jsonOf(r);
    if (v && revoke) {
      const o = revoke.outcome;
      const surely = o.kind === 'answer' && !o.slow && o.status >= 200 && o.status < 300 && o.quality === 'ok';
      const surelyNot = ['hang', 'broken', 'upgrade'].includes(o.kind) || (o.kind === 'answer' && (o.status < 200 || o.status > 299));
      if (surely && v.revoked !== true) problems.push(problem('wrong', 'unpair:revoked-false-on-2xx', `revoked ${v.revoked} although the service answered ${revoke.label}`));
      if (surelyNot && !o.slow && v.revoked === true) problems.push(problem('wrong', `unpair:revoked-true-on-${o.kind}-${statusClass(o.status)}`, `revoked true although the service answered ${revoke.label}`));
    }
  }
  return { desc, problems, result: r };
}

// ---- the daemon -----------------------------------------------------------------------

/** Socket inodes of this pid in CLOSE_WAIT (the peer closed, the agent never did), from /proc/net/tcp{,6}. */
function closeWaitSockets(pid) {
  const fds = openFds(pid);
  if (fds === undefined) return 0;
  const mine = new Set(fds.sockets);
  let n = 0;
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === '08' && mine.has(cols[9])) n++;
    }
  }
  return n;
}

async function daemonCase(ctx, world, server, retryOnly, scale) {
  const { rng } = ctx;
  const lifetimeS = rng.pick([28800, 3600, 600, 120]);
  const rig = makeRig(ctx.tmp, world, server, rng, { credentials: true, scale, lifetimeS });
  mkdirSync(rig.dirs.media, { recursive: true });
  const files = rng.int(1, 3);
  for (let i = 0; i < files; i++) {
    const f = path.join(rig.dirs.media, `clip-${i}.mp4`);
    writeFileSync(f, rng.bytes(rng.pick([0, 1, 1000, 70_000, 200_000])));
    const old = (Date.now() - 3_600_000) / 1000;
    utimesSync(f, old, old);
  }
  const env = { ...rig.env, C2C_MEDIA_DIR: rig.dirs.media, C2C_MEDIA_SETTLE_SECONDS: '1', C2C_LOG_LEVEL: rng.pick(['info', 'debug']) };
  const seconds = rng.int(6, 9);
  const desc = [`c2c-agent run --time-scale ${scale} for ${seconds} s real (${retryOnly ? 'uploads answered only with what a client must retry' : 'any answers'}), ${files} clip(s), token lifetime ${lifetimeS} s`];
  const problems = [];
  const spawnedAt = server.now();
  const d = start(process.execPath, [ctx.bundle, 'run'], { env, cwd: ctx.tmp, timeoutMs: Infinity });
  // SIGHUP (`systemctl reload`, or `pair` telling the daemon of new credentials) at any moment: the daemon
  // reloads, it never dies of it. `pair` finds the daemon's pid in run.lock, so the earliest SIGHUP that can
  // come is one the moment run.lock appears (docs/files.md: run.lock, pid and process start time).
  const hups = Array.from({ length: rng.weighted([[5, 0], [3, 1], [2, 2]]) }, () => (rng.chance(0.4) ? 'at run.lock' : rng.int(500, seconds * 1000 - 500)));
  const lockFile = path.join(rig.dirs.run, 'run.lock');
  const hupTimers = hups.map((when) => {
    if (when !== 'at run.lock') return setTimeout(() => d.signal('SIGHUP'), when);
    const t0 = Date.now();
    const poll = setInterval(() => {
      if (existsSync(lockFile) || Date.now() - t0 > 5_000) {
        clearInterval(poll);
        d.signal('SIGHUP');
      }
    }, 2);
    return poll;
  });
  if (hups.length > 0) desc.push(`SIGHUP ${hups.map((h) => (typeof h === 'number' ? `at ${h} ms` : h)).join(', ')}`);
  let maxFds = 0;
  const sampler = setInterval(() => {
    const f = d.pid === undefined ? undefined : openFds(d.pid);
    if (f) maxFds = Math.max(maxFds, f.count);
    const rss = d.pid === undefined ? undefined : rssMiB(d.pid);
    if (rss !== undefined && rss > 300) d.kill();
  }, 200);
  let exited;
  void d.done.then((r) => (exited = r));
  try {
    // Half-way: `status` must see the daemon running (0, or 77 in needs-pairing), never "not running".
    // (The case's length is real time: how long the daemon faces the hostile service.)
    await sleep(seconds * 500); // real time: the case's length, how long a real daemon faces the hostile service
    if (exited === undefined) {
      const st = await run(process.execPath, [ctx.bundle, 'status', '--json'], { env: rig.env, cwd: ctx.tmp, timeoutMs: 10_000 });
      problems.push(...cliProblems(st, { label: 'status-while-running', json: 'object', secrets: world.secrets }));
      if (exited === undefined && !st.timedOut && st.code !== 0 && st.code !== 77) {
        problems.push(problem('wrong', `status-while-running:exit${st.code}`, `status exits ${st.code} while the daemon runs: ${firstLine(st.stderr)}`));
      }
    }
    await sleep(seconds * 500); // real time: the case's length, as above
    // A connection idle past the agent's idle close is the agent's to close on its next turn, and a loaded
    // machine makes that turn late: a leak is one that stays (10 real s more, a bound against a hang).
    const idleOpen = () => server.openConnections().filter((c) => c.idleMs > STALE_SOCKET_MS && !c.peerEnded);
    let stale = idleOpen();
    if (stale.length > 0 && exited === undefined) stale = (await pollUntil(() => idleOpen().length === 0, { everyMs: 50, hangMs: 10_000 })) ? [] : idleOpen();
    if (exited !== undefined) {
      problems.push(problem('crash', `daemon:died-${exited.signal ?? exited.code}`, `the daemon exited ${exited.signal ?? exited.code} before SIGTERM: ${lastLogLines(exited.stdout + exited.stderr)}`));
    } else {
      if (stale.length > 0) {
        problems.push(problem('wrong', 'daemon:socket-leak', `${stale.length} connection(s) the agent keeps open with nothing moving for > ${STALE_SOCKET_MS} ms, still 10 real s on (${[...new Set(stale.map((c) => `${c.state} after ${c.label ?? 'no request'}`))].join('; ')})`));
      }
      // One the service just closed is the agent's to close on its next turn: a leak is one that stays.
      let cw = closeWaitSockets(d.pid);
      if (cw > 2) cw = (await pollUntil(() => closeWaitSockets(d.pid) <= 2, { everyMs: 50, hangMs: 10_000 })) ? 0 : closeWaitSockets(d.pid);
      if (cw > 2) problems.push(problem('wrong', 'daemon:close-wait-sockets', `${cw} sockets the service closed are still open in the agent (CLOSE_WAIT) 10 real s on`));
      if (maxFds > 200) problems.push(problem('wrong', 'daemon:fds', `${maxFds} open descriptors`));
      d.signal('SIGTERM');
      const stop = await within(d.done, STOP_HANG_MS);
      if (stop === undefined) {
        d.kill();
        problems.push(problem('hang', 'daemon:stop-hang', `still running ${STOP_HANG_MS / 1000} real s after SIGTERM`));
      } else if (stop.signal !== null) problems.push(problem('crash', `daemon:stop-signal-${stop.signal}`, `died of ${stop.signal} after SIGTERM`));
      else if (stop.code !== 0) problems.push(problem(stop.code === 1 ? 'crash' : 'wrong', `daemon:stop-exit${stop.code}`, `exit ${stop.code} after SIGTERM: ${lastLogLines(stop.stdout + stop.stderr)}`));
    }
  } finally {
    clearInterval(sampler);
    for (const t of hupTimers) clearInterval(t); // clears a timeout as well
    d.kill();
  }
  const r = await d.done;
  if (r.rssKilled || r.maxRssMiB > 300) problems.push(problem('crash', 'daemon:rss', `RSS reached ${r.maxRssMiB} MiB`));
  problems.push(...daemonLogProblems(r, world));
  problems.push(...redirectProblems(server, 'daemon'));
  problems.push(...heartbeatProblems(server, scale, spawnedAt));
  const agentMinutes = (seconds * scale) / 60;
  for (const [route, n] of server.counts) {
    if (route !== 'storage' && n > 30 + 60 * agentMinutes) problems.push(problem('wrong', `daemon:request-storm-${route}`, `${n} ${route} requests in ${agentMinutes.toFixed(0)} agent minutes`));
  }
  // Whatever the token endpoint said, the credentials file holds a pair the service really granted (never a half-valid answer).
  if (existsSync(rig.tokenFile)) {
    let stored;
    try {
      stored = JSON.parse(readFileSync(rig.tokenFile, 'utf8'));
    } catch {
      stored = undefined;
    }
    if (stored === undefined || typeof stored !== 'object') problems.push(problem('wrong', 'daemon:credentials-corrupt', 'credentials.json is no longer a JSON object'));
    else if (!world.secrets.has(stored.access_token)) problems.push(problem('wrong', 'daemon:credentials-foreign-token', `credentials.json holds an access token the service never granted (${typeof stored.access_token})`));
    else if (stored.refresh_token !== undefined && !world.secrets.has(stored.refresh_token)) problems.push(problem('wrong', 'daemon:credentials-foreign-refresh', 'credentials.json holds a refresh token the service never granted'));
  }
  desc.push(`token refreshes: ${answered(server, 'refresh').map((e) => e.label).slice(0, 4).join('; ') || 'none'}`);
  // What became of the uploads: `queue --json` reads the state dir.
  const q = await run(process.execPath, [ctx.bundle, 'queue', '--json'], { env: rig.env, cwd: ctx.tmp, timeoutMs: 10_000 });
  problems.push(...cliProblems(q, { label: 'queue-after-run', json: 'object', secrets: world.secrets }));
  const uploadAnswers = server.log.filter((e) => e.route === 'assets' || e.route === 'storage');
  const allRetryable = uploadAnswers.every((e) => retryable(e.outcome, e.route));
  const v = jsonOf(q);
  const dead = (v?.items ?? []).filter((i) => i.kind === 'upload' && (i.state === 'dead' || i.upload?.state === 'dead-lettered'));
  for (const i of dead) {
    if (allRetryable && !/gave up after/i.test(String(i.reason ?? ''))) {
      problems.push(problem('wrong', 'daemon:upload-dead-lettered-on-retryable', `upload ${i.upload?.name ?? i.id} dead-lettered (${String(i.reason ?? '').slice(0, 160)}) though every upload answer was one to retry: ${uploadAnswers.map((e) => `${e.method} ${e.path} -> ${e.label}`).join('; ').slice(0, 1500)}`));
    }
  }
  desc.push(`requests: ${[...server.counts].map(([k, n]) => `${k} ${n}`).join(', ')}`);
  desc.push(`upload answers: ${uploadAnswers.slice(0, 6).map((e) => `${e.route} ${e.label}`).join('; ')}${uploadAnswers.length > 6 ? '; …' : ''}`);
  return { desc, problems, result: r };
}

function lastLogLines(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.slice(-2).map((l) => l.slice(0, 300)).join(' | ');
}

/** The daemon's own output: pino JSON lines on stdout, nothing on stderr, no bug logged, no secret. */
function daemonLogProblems(r, world) {
  const out = [];
  const lines = r.stdout.split('\n').filter((l) => l !== '');
  let bad = 0;
  for (const l of lines) {
    let rec;
    try {
      rec = JSON.parse(l);
    } catch {
      if (++bad === 1) out.push(problem('wrong', 'daemon:log-not-json', `a stdout line is not JSON: ${l.slice(0, 200)}`));
      continue;
    }
    if (rec.level >= 50 && /a bug|uncaught|unhandled/i.test(String(rec.msg))) out.push(problem('crash', 'daemon:bug-logged', `${String(rec.msg).slice(0, 200)} ${String(rec.err?.message ?? rec.err ?? '').slice(0, 200)}`));
  }
  if (r.stderr.trim() !== '') out.push(problem('wrong', 'daemon:stderr', `the daemon wrote to stderr: ${firstLine(r.stderr)}`));
  const leak = leakedSecret(r.stdout + r.stderr, world.secrets);
  if (leak !== undefined) out.push(problem('wrong', 'daemon:secret-leak', `a secret (${leak.slice(0, 6)}…) appears in the daemon's log`));
  return out;
}

/**
 * docs/heartbeat-and-tokens.md: two attempts never less than 60 agent s apart, judged here only as a
 * loaded machine cannot break it, with no slack: N attempts that reached the server are N - 1 minimum
 * intervals of the daemon's clock (this machine's monotonic clock times the scale), all after its spawn,
 * so the last cannot arrive sooner than (N - 1) x 60 000 / scale real ms after the spawn. Load only
 * spreads them out; a storm or a schedule that runs short is caught (less 2 ms: Date.now's whole ms at
 * either end). A single short gap between longer ones is not: the exact rule, pair by pair, is held on a
 * virtual clock by test/daemon/heartbeat-property.test.ts and test/e2e/heartbeat.test.ts.
 */
function heartbeatProblems(server, scale, spawnedAt) {
  const beats = answered(server, 'heartbeat');
  if (beats.length < 2) return [];
  const spanMs = beats.at(-1).t - spawnedAt;
  const needMs = ((beats.length - 1) * 60_000) / scale - 2;
  if (spanMs < needMs) return [problem('wrong', 'daemon:heartbeat-too-soon', `${beats.length} heartbeats within ${spanMs} real ms of the spawn at scale ${scale}: 60 agent s apart they need ${Math.ceil(needMs)}`)];
  return [];
}

/**
 * Half the cases run over TLS (the agent trusts the hostile server's CA through
 * caFile), and in some of those the TLS front misbehaves on a share of new
 * connections: a handshake cut after the ClientHello, one held for a while,
 * a certificate no client accepts. Drawn from a stream of its own, so the
 * other draws of a seed stay what they were.
 */
function tlsPlan(rng) {
  if (!rng.chance(0.5)) return undefined;
  const rate = rng.pick([0, 0, 0.1, 0.25]);
  const conn = rng.fork('connections');
  return {
    rate,
    trouble() {
      if (!(rate > 0) || !conn.chance(rate)) return undefined;
      const kind = conn.pick(['cut', 'hold', 'certificate']);
      if (kind === 'hold') return { kind, ms: conn.pick([200, 1500, 6000]) };
      if (kind === 'certificate') return { kind, certificate: conn.pick(['expired', 'not-yet-valid', 'wrong-host', 'unknown-ca']) };
      return { kind };
    },
  };
}

// ---- the target -----------------------------------------------------------------------

export const answersTarget = {
  name: 'answers',
  async runCase(ctx) {
    const { rng } = ctx;
    const kind = rng.weighted([[45, 'check'], [20, 'pair'], [15, 'unpair'], [12, 'daemon']]);
    const retryOnly = kind === 'daemon' && rng.chance(0.5);
    const scale = kind === 'daemon' ? rng.pick([60, 200, 600]) : CLI_SCALE;
    const pValid = {
      check: { me: 0.25, health: 0.5 },
      pair: { code: 0.6, poll: 0.3, me: 0.5 },
      unpair: { revoke: 0.4 },
      daemon: {},
    }[kind];
    const daemonValid = rng.pick([0.4, 0.6, 0.8]);
    const mixFor = (route) => ({
      pValid: pValid[route] ?? (kind === 'daemon' ? daemonValid : 0.5),
      retryOnly: retryOnly && (route === 'assets' || route === 'storage'),
      pProperWire: 0.45,
      pGarbageHeaders: 0.25,
    });
    // The server needs the planner and the planner the server's URL (for presigned URLs): a late binding.
    let plan;
    const tls = tlsPlan(rng.fork('tls'));
    const server = await startHostileServer({ plan: (req) => plan(req), onError: (err) => ctx.log?.(`planner error: ${err?.stack ?? err}`), ...(tls && { tls }) });
    const world = new World(rng.fork('world'), server.url);
    plan = planner(rng.fork('server'), world, mixFor);
    try {
      const res =
        kind === 'check' ? await checkCase(ctx, world, server)
        : kind === 'pair' ? await pairCase(ctx, world, server)
        : kind === 'unpair' ? await unpairCase(ctx, world, server)
        : await daemonCase(ctx, world, server, retryOnly, scale);
      if (tls) {
        const t = server.tlsTrouble;
        res.desc.push(`over TLS (caFile)${tls.rate > 0 ? `, the TLS front spoiling ${tls.rate * 100}% of connections: ${t.cut} cut, ${t.held} held, ${t.badCertificate} bad certificate` : ''}`);
      }
      return res;
    } finally {
      await server.close();
    }
  },
};
