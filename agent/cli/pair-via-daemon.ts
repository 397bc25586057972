// `c2c-agent pair` when a daemon runs: the daemon pairs (POST /v1/pair, its
// own client secret) and this command only shows the flow, from the
// `pairing` lines of GET /v1/events, on the same screen and with the same
// --json lines and exit codes as pairing by itself. Ctrl-C or SIGTERM
// cancels the daemon's flow (DELETE /v1/pair) and exits 130 / 143.
import type { PairingEvent } from '../auth/pairing.js';
import { pairingProgress, type PairingProgress } from '../auth/events.js';
import type { Settings } from '../config/types.js';
import { SystemClock } from '../lib/clock.js';
import { AgentError, errorKindOf, EXIT } from '../lib/errors.js';
import { oneLine } from '../lib/text.js';
import type { DaemonApi, EventsHandle } from './daemon-api.js';
import { PairReporter } from './pair-report.js';

/** What ends the wait: the flow's last word, the stream's end, or a signal. */
type Ending = { kind: 'progress'; p: PairingProgress } | { kind: 'stream-ended' } | { kind: 'signal'; signal: string } | { kind: 'time-limit' };

/** Past the daemon's own time limit, how long this command still waits for its last word (real ms). */
const GRACE_MS = 60_000;

export interface DaemonPairOptions {
  settings: Settings;
  json: boolean;
  timeoutS: number;
  /** Aborted with the signal's name (SIGINT, SIGTERM) when the person cancels. */
  cancel: AbortSignal;
}

export interface DaemonPairResult {
  exitCode: number;
  /** Set for a failure: the one stderr line; the caller prints it. */
  error?: AgentError | { kind: 'cancelled'; message: string };
}

/** The command's events with a progress line from the daemon, so one reporter shows both. */
function toPairingEvent(p: PairingProgress, clock: SystemClock): PairingEvent | undefined {
  switch (p.phase) {
    case 'code':
      return {
        type: 'code',
        code: {
          userCode: p.user_code,
          verificationUri: p.verification_uri,
          verificationUriComplete: p.verification_uri_complete,
          expiresInSeconds: p.expires_in,
          intervalSeconds: p.interval,
          ...(p.name !== undefined && { name: p.name }),
          expiresAt: clock.now() + p.expires_in * 1000,
        },
      };
    case 'waiting':
      return { type: 'waiting', remainingSeconds: p.expires_in };
    case 'slow_down':
      return { type: 'slow-down', intervalSeconds: p.interval };
    case 'retrying':
      return { type: 'retrying', error: new AgentError(kindOf(p.error.kind), p.error.message) };
    default:
      return undefined;
  }
}

/** The daemon's error kind, so the exit code is the one pairing by itself would give; a kind this build does not know is 'unavailable'. */
function kindOf(kind: string): AgentError['kind'] {
  return errorKindOf(kind) ?? 'unavailable';
}

/** A `pairing` line from the stream, checked by its one declaration (auth/events.ts): an odd one is skipped. */
function progressOf(e: Record<string, unknown>): PairingProgress | undefined {
  return e.type === 'pairing' ? pairingProgress(e) : undefined;
}

export async function pairThroughDaemon(api: DaemonApi, o: DaemonPairOptions, attach: (onEvent: (e: Record<string, unknown>) => void) => Promise<EventsHandle | undefined>): Promise<DaemonPairResult | undefined> {
  const clock = new SystemClock(o.settings.timeScale);
  let reporter: PairReporter | undefined;
  let shownCode: string | undefined;
  let settle: (e: Ending) => void = () => undefined;
  const ending = new Promise<Ending>((resolve) => (settle = resolve));
  const show = (p: PairingProgress): void => {
    if (p.phase === 'code') {
      // The same code from the POST's answer and from the stream is shown once.
      if (p.user_code === shownCode) return;
      shownCode = p.user_code;
    }
    if (p.phase === 'verifying') {
      reporter?.status('approved; verifying the new credentials with the service…');
      return;
    }
    if (p.phase === 'paired' || p.phase === 'failed' || p.phase === 'cancelled') {
      settle({ kind: 'progress', p });
      return;
    }
    const e = toPairingEvent(p, clock);
    if (e !== undefined) reporter?.event(e);
  };
  const early: PairingProgress[] = [];
  const handle = await attach((e) => {
    const p = progressOf(e);
    if (p === undefined) return;
    if (reporter === undefined) early.push(p);
    else show(p);
  });
  if (handle === undefined) return undefined;
  const pid = typeof handle.status?.pid === 'number' ? handle.status.pid : undefined;
  const onCancel = (): void => settle({ kind: 'signal', signal: (o.cancel.reason as { signal?: string } | undefined)?.signal ?? 'SIGINT' });
  // A signal that came while attaching counts as much as one that comes later.
  if (o.cancel.aborted) onCancel();
  else o.cancel.addEventListener('abort', onCancel, { once: true });
  void handle.ended.then(() => settle({ kind: 'stream-ended' }));
  // The daemon's limit is agent time (its --time-scale); the grace is real time for its last word to arrive.
  const limit = clock.setTimer(() => settle({ kind: 'time-limit' }), o.timeoutS * 1000 + GRACE_MS * clock.scale);
  try {
    reporter = new PairReporter(o.json, clock);
    // Lines that came before the reporter (a flow already under way) are shown first.
    const code = api.require<Omit<Extract<PairingProgress, { phase: 'code' }>, 'phase'>>('POST', '/v1/pair', { timeoutSeconds: o.timeoutS }, 60_000);
    const started = await Promise.race([code.then((c) => ({ ok: true as const, c }), (err: unknown) => ({ ok: false as const, err })), ending.then((e) => ({ ok: 'ended' as const, e }))]);
    if (started.ok === false) throw started.err;
    if (started.ok === true) show({ phase: 'code', ...started.c });
    for (const p of early.splice(0)) show(p);
    const end = await ending;
    return finish(end, o, reporter, api, pid);
  } catch (err) {
    const e = err instanceof AgentError ? err : new AgentError('unavailable', String(err));
    reporter?.done({ event: 'failed', ok: false, exitCode: e.exitCode, error: e.toJSON() }, []);
    return { exitCode: e.exitCode, error: e };
  } finally {
    limit.cancel();
    o.cancel.removeEventListener('abort', onCancel);
    handle.close();
  }
}

async function finish(end: Ending, o: DaemonPairOptions, reporter: PairReporter, api: DaemonApi, pid: number | undefined): Promise<DaemonPairResult> {
  const failed = (e: AgentError): DaemonPairResult => {
    reporter.done({ event: 'failed', ok: false, exitCode: e.exitCode, error: e.toJSON() }, []);
    return { exitCode: e.exitCode, error: e };
  };
  if (end.kind === 'signal') {
    // The daemon's flow stops too; nothing is stored (unless the grant was already being stored, which it says).
    const exitCode = end.signal === 'SIGTERM' ? 143 : 130;
    const said = await api.request('DELETE', '/v1/pair', undefined, 5_000).catch(() => undefined);
    const tooLate = said?.status === 409;
    const message = tooLate ? `pairing cancelled (${end.signal}), but the daemon was already storing the approved credentials: see c2c-agent status` : `pairing cancelled (${end.signal}); nothing was stored`;
    reporter.done({ event: 'failed', ok: false, exitCode, error: { kind: 'cancelled', message } }, []);
    return { exitCode, error: { kind: 'cancelled', message } };
  }
  if (end.kind === 'stream-ended') return failed(new AgentError('unavailable', 'the daemon ended the events stream before the pairing was over (stopping or restarting?); see c2c-agent status, then run `c2c-agent pair` again'));
  if (end.kind === 'time-limit') {
    await api.request('DELETE', '/v1/pair', undefined, 5_000).catch(() => undefined);
    return failed(new AgentError('timeout', `the daemon did not finish the pairing within ${o.timeoutS} s; run \`c2c-agent pair\` again`));
  }
  const p = end.p;
  if (p.phase === 'cancelled') {
    const message = 'pairing cancelled by another client of the daemon (DELETE /v1/pair); nothing was stored';
    reporter.done({ event: 'failed', ok: false, exitCode: EXIT.tempfail, error: { kind: 'cancelled', message } }, []);
    return { exitCode: EXIT.tempfail, error: { kind: 'cancelled', message } };
  }
  if (p.phase === 'failed') return failed(new AgentError(kindOf(p.error.kind), p.error.message));
  if (p.phase !== 'paired') return failed(new AgentError('internal', `unexpected pairing phase ${String((p as { phase: unknown }).phase)}`));
  const credentials = o.settings.tokenFile;
  if (p.unverified !== undefined) {
    const u = p.unverified;
    return failed(new AgentError(kindOf(u.kind), `paired, and the daemon stored the credentials, but the service could not confirm them yet: ${u.message}; the daemon verifies them once it reaches the service (or run \`c2c-agent check\`)`));
  }
  const device = p.device ?? {};
  const text = (v: unknown, fallback: string): string => (typeof v === 'string' && v !== '' ? v : fallback);
  const daemonLine = `the running daemon${pid === undefined ? '' : ` (pid ${pid})`} paired and uses the credentials now`;
  reporter.done(
    { event: 'paired', ok: true, exitCode: EXIT.ok, device, credentials, daemon: 'running', warnings: p.warnings },
    [
      `paired: ${oneLine(text(device.name, '(unnamed)'), 120)} (device ${oneLine(text(device.id, '?'), 80)})`,
      `project: ${oneLine(text(device.project, '(name not sent)'), 120)} (id ${oneLine(text(device.project_id, 'unknown'), 80)})`,
      `credentials: ${credentials}`,
      `daemon: ${daemonLine}`,
      ...p.warnings.map((w) => `warning: ${w}`),
    ],
  );
  return { exitCode: EXIT.ok };
}
