// How a command reaches the running daemon: its local API on
// `<runtime-dir>/api.sock` (agent/localapi/client.ts). A socket nobody serves
// (ENOENT, ECONNREFUSED) means no daemon runs, and the command works from the
// files as it always did; a socket this user may not open is a setting to fix
// (78, with the way in), never "no daemon"; a daemon that does not answer in
// time is 69. A refusal's `kind` is the agent's own error kind when the
// daemon sent one, so a command exits with the code it would have had doing
// the work itself.
import { START_ADVICE } from '../lib/advice.js';
import type { Settings } from '../config/types.js';
import { AgentError, errorKindOf, type ErrorKind } from '../lib/errors.js';
import { fsError } from '../lib/fs-errors.js';
import { oneLine } from '../lib/text.js';
import { apiEvents, apiRequest, LocalApiUnreachable, type ApiReply } from '../localapi/client.js';
import { apiSocketOf } from '../localapi/local-api-unit.js';
import { runningDaemon } from '../daemon/runtime/run-lock.js';

/** Where no daemon listens: a socket that is not there, or one nobody accepts on (a daemon that died). */
const NOBODY_SERVES = new Set(['ENOENT', 'ECONNREFUSED', 'ENOTSOCK']);

/** The error kind a refusal maps to when the daemon did not send one of the agent's own. */
function kindOfStatus(status: number): ErrorKind {
  if (status === 400 || status === 404 || status === 405 || status === 413) return 'usage';
  if (status === 403) return 'forbidden';
  if (status === 409) return 'conflict';
  return 'unavailable';
}

/** A refusal from the daemon as an AgentError: its message, its kind when it is one of the agent's. */
export function refusal(reply: ApiReply, doing: string): AgentError {
  const e = (reply.body as { error?: { kind?: unknown; message?: unknown } } | undefined)?.error;
  const message = typeof e?.message === 'string' ? oneLine(e.message, 400) : `the daemon answered ${reply.status} to ${doing}`;
  // A request the daemon could not take as asked (no such upload, a path that is not there, a bad value) is the person's to fix: 64.
  const asked = reply.status === 400 || reply.status === 404 || reply.status === 405 || reply.status === 413;
  const kind = (asked ? undefined : errorKindOf(e?.kind)) ?? kindOfStatus(reply.status);
  return new AgentError(kind, message, { status: reply.status });
}

export class DaemonApi {
  readonly socket: string;

  constructor(private readonly settings: Pick<Settings, 'runtimeDir' | 'sources'> & Partial<Pick<Settings, 'startAdvice'>>) {
    this.socket = apiSocketOf(settings.runtimeDir);
  }

  private unreachable(err: LocalApiUnreachable): AgentError {
    if (err.code === 'ETIMEDOUT') return new AgentError('unavailable', `the daemon's API at '${this.socket}' did not answer in time; see \`systemctl status c2c-agent\``, { code: err.code });
    // A path the user cannot reach (EACCES, ENOTDIR, ELOOP...) is the one mapping's (lib/fs-errors.ts): a setting or a permission to fix, 78.
    const e = fsError({ code: err.code, syscall: 'connect', errno: 0 }, "connect to the daemon's API at", this.socket, this.settings.sources.runtimeDir ?? 'the default runtime dir');
    if (err.code !== 'EACCES' && err.code !== 'EPERM') return e;
    return new AgentError(e.kind, `${e.message}, or add this user to the agent's group (docs/local-api.md, "Who may connect")`, e.details);
  }

  /**
   * One request; undefined when no daemon serves the socket. Any other
   * failure to reach it is thrown as an AgentError.
   */
  async request<T = unknown>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<ApiReply<T> | undefined> {
    try {
      return await apiRequest<T>(this.socket, method, path, body, timeoutMs === undefined ? {} : { timeoutMs });
    } catch (err) {
      if (err instanceof LocalApiUnreachable) {
        if (NOBODY_SERVES.has(err.code)) return undefined;
        throw this.unreachable(err);
      }
      throw new AgentError('unavailable', `the daemon's API at '${this.socket}' broke off the answer (${err instanceof Error ? err.message : String(err)})`);
    }
  }

  /** One request the daemon must answer: no daemon is 69 with how to start it; a refusal is thrown (refusal()). */
  async require<T = unknown>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<T> {
    const reply = await this.request<T>(method, path, body, timeoutMs);
    if (reply === undefined) throw notRunning(this.socket, this.settings.startAdvice);
    if (reply.status < 200 || reply.status > 299) throw refusal(reply, `${method} ${path}`);
    return reply.body;
  }

  /**
   * Attaches to GET /v1/events. Resolves with a handle once the first line
   * (the status) came, or undefined when no daemon serves the socket.
   */
  async events(onEvent: (e: Record<string, unknown>) => void): Promise<EventsHandle | undefined> {
    const ac = new AbortController();
    let first: (status: Record<string, unknown> | null) => void = () => undefined;
    const connected = new Promise<Record<string, unknown> | null>((resolve) => (first = resolve));
    let seen = false;
    const ended = apiEvents(
      this.socket,
      (e) => {
        if (!seen) {
          seen = true;
          first((e.status as Record<string, unknown> | null | undefined) ?? null);
          return;
        }
        onEvent(e);
      },
      { signal: ac.signal },
    );
    const outcome = await Promise.race([connected.then((status) => ({ kind: 'connected' as const, status })), ended.then(() => ({ kind: 'ended' as const }), (err: unknown) => ({ kind: 'failed' as const, err }))]);
    if (outcome.kind === 'failed') {
      const err = outcome.err;
      if (err instanceof LocalApiUnreachable) {
        if (NOBODY_SERVES.has(err.code)) return undefined;
        throw this.unreachable(err);
      }
      throw new AgentError('unavailable', `the daemon's API at '${this.socket}' refused the events stream (${err instanceof Error ? err.message : String(err)})`);
    }
    if (outcome.kind === 'ended') throw new AgentError('unavailable', `the daemon's API at '${this.socket}' ended the events stream at once; is the daemon stopping?`);
    return { status: outcome.status, ended, close: () => ac.abort() };
  }
}

export interface EventsHandle {
  /** The status document the stream began with. */
  status: Record<string, unknown> | null;
  /** Resolves when the daemon ends the stream (or close() was called). */
  ended: Promise<void>;
  close(): void;
}

export function notRunning(socket: string, startAdvice = START_ADVICE): AgentError {
  return new AgentError('unavailable', `no daemon runs (nothing serves ${socket}); ${startAdvice}`);
}

/**
 * For a command about to do the daemon's work itself (pair, unpair, upload
 * without a daemon): a daemon that holds the run lock but whose API does not
 * answer must not get a second writer of its state beside it.
 */
export function assertNoDaemon(settings: Pick<Settings, 'runtimeDir'>, socket: string, doing: string): void {
  const owner = runningDaemon(settings.runtimeDir);
  if (owner === undefined) return;
  throw new AgentError('unavailable', `a daemon runs (pid ${owner.pid}) but its API at ${socket} does not answer, and it alone may ${doing} while it runs; restart it (\`systemctl restart c2c-agent\`) and try again`);
}
