// The CLI through the daemon keeps the daemon's error kind, so a command
// exits as it would have without a daemon: a refusal's kind (cli/daemon-api.ts
// refusal) and a pairing the daemon reports failed (cli/pair-via-daemon.ts),
// every kind lib/errors.ts knows, the TLS and clock kinds among them.
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { ApiReply } from '../../agent/localapi/client.js';
import { type DaemonApi, type EventsHandle, refusal } from '../../agent/cli/daemon-api.js';
import { pairThroughDaemon } from '../../agent/cli/pair-via-daemon.js';
import type { Settings } from '../../agent/config/types.js';
import { AgentError, EXIT, errorKindOf, type ErrorKind } from '../../agent/lib/errors.js';

const reply = (status: number, kind: string): ApiReply => ({ status, body: { error: { kind, message: `refused as ${kind}` } } });

describe('error kinds from the daemon', () => {
  it('errorKindOf knows every kind that has an exit code, and nothing else', () => {
    for (const k of ['usage', 'config', 'network', 'disk', 'tls', 'clock', 'internal'] as const) expect(errorKindOf(k)).toBe(k);
    for (const k of ['cancelled', 'toString', '__proto__', '', 5, undefined]) expect(errorKindOf(k)).toBeUndefined();
  });

  it.each([
    [502, 'tls', EXIT.protocol],
    [503, 'clock', EXIT.tempfail],
    [503, 'network', EXIT.unavailable],
    [409, 'config', EXIT.config],
  ] as const)('a refusal %i of kind %s keeps its kind: exit %i', (status, kind, exit) => {
    const e = refusal(reply(status, kind), 'POST /v1/pair');
    expect(e.kind).toBe(kind);
    expect(e.exitCode).toBe(exit);
    expect(e.message).toBe(`refused as ${kind}`);
  });

  it('a kind this build does not know is taken from the status; a request the daemon could not take as asked is usage', () => {
    expect(refusal(reply(503, 'from-the-future'), 'x').kind).toBe('unavailable');
    expect(refusal(reply(400, 'config'), 'x').kind).toBe('usage');
  });
});

describe('pair through the daemon: the failed line', () => {
  let write: ReturnType<typeof jest.spyOn>;
  beforeEach(() => {
    write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
  });
  afterEach(() => write.mockRestore());

  /** The command's run against a daemon whose events the test sends through `onEvent`. */
  function pairWith(timeScale: number, timeoutS: number): { running: ReturnType<typeof pairThroughDaemon>; send: (e: Record<string, unknown>) => void; deletes: string[] } {
    let onEvent: (e: Record<string, unknown>) => void = () => undefined;
    const deletes: string[] = [];
    const code = { user_code: '123456', verification_uri: 'https://svc.example/pair', verification_uri_complete: null, expires_in: 120, interval: 5 };
    const api = {
      require: async () => code,
      request: async (method: string, path: string) => (deletes.push(`${method} ${path}`), { status: 200, body: {} }),
    } as unknown as DaemonApi;
    const handle: EventsHandle = { status: { pid: 42 }, ended: new Promise<void>(() => undefined), close: () => undefined };
    const settings = { timeScale, tokenFile: '/nonexistent/credentials.json' } as unknown as Settings;
    const running = pairThroughDaemon(api, { settings, json: true, timeoutS, cancel: new AbortController().signal }, async (fn) => {
      onEvent = fn;
      return handle;
    });
    return { running, send: (e) => onEvent(e), deletes };
  }

  it("the command's own limit: the daemon's time (scaled) and a minute's real grace, then a DELETE and exit 75", async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const { running, deletes } = pairWith(100, 600);
      let done = false;
      void running.then(() => (done = true));
      await new Promise((r) => setImmediate(r));
      // 600 agent s at scale 100 are 6 real s; then 60 real s of grace.
      await jest.advanceTimersByTimeAsync(6_000 + 60_000 - 10);
      expect(done).toBe(false);
      await jest.advanceTimersByTimeAsync(20);
      const r = await running;
      expect(r).toMatchObject({ exitCode: EXIT.tempfail, error: { kind: 'timeout' } });
      expect(deletes).toEqual(['DELETE /v1/pair']);
    } finally {
      jest.useRealTimers();
    }
  });

  async function pairFailing(kind: ErrorKind): Promise<{ exitCode: number; kind: string | undefined }> {
    const { running, send } = pairWith(1, 600);
    await new Promise((r) => setImmediate(r));
    send({ type: 'pairing', at: 'x', phase: 'failed', exitCode: new AgentError(kind, 'x').exitCode, error: { kind, message: `the daemon failed: ${kind}` } });
    const r = await running;
    if (r === undefined) throw new Error('no daemon answer');
    return { exitCode: r.exitCode, kind: r.error?.kind };
  }

  it.each([
    ['tls', EXIT.protocol],
    ['clock', EXIT.tempfail],
    ['network', EXIT.unavailable],
  ] as const)("a pairing the daemon ends failed with kind %s exits %i, as pairing by itself would", async (kind, exit) => {
    expect(await pairFailing(kind)).toEqual({ exitCode: exit, kind });
  });
});
