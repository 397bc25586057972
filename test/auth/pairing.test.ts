// pairDevice (RFC 8628) on a FakeClock with a scripted OAuthEndpoints: poll
// timing, slow_down, code renewal, refusals, transient errors, the overall
// time limit, cancellation, and the secret device code never in an event.
import { afterEach, describe, expect, test } from '@jest/globals';
import type { DeviceCode, PollOutcome, TokenGrant } from '../../agent/api/oauth.js';
import { codeFields, pairDevice, type PairingEvent } from '../../agent/auth/pairing.js';
import { AgentError } from '../../agent/lib/errors.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { CLIENT, FakeOAuth, grantOf, networkDown, oauthRefusal } from '../support/auth-fixtures.js';

const S = 1000;
const T0 = 1_000_000;
const SECRET = 'device-code-secret';

const codeOf = (n: number, o: Partial<DeviceCode> = {}): DeviceCode => ({
  deviceCode: `${SECRET}-${n}`,
  userCode: `12345${n}`,
  verificationUri: 'https://svc.example/pair',
  verificationUriComplete: `https://svc.example/pair?user_code=12345${n}`,
  expiresInSeconds: 120,
  intervalSeconds: 5,
  name: 'Camera 1',
  ...o,
});

type Poll = PollOutcome | AgentError;
const pending: Poll = { kind: 'pending' };
const slowDown: Poll = { kind: 'slow-down' };
const expired: Poll = { kind: 'expired' };
const tokens = (g: TokenGrant = grantOf('acc-paired-000001', 'ref-paired-000001')): Poll => ({ kind: 'tokens', grant: g });

let allEvents: PairingEvent[] = [];

/** Runs pairDevice against scripted answers (the last poll answer repeats); codes come from `codes` in order. */
function run(o: { codes?: (DeviceCode | AgentError)[]; polls?: Poll[]; timeoutMs?: number } = {}) {
  const clock = new FakeClock(T0);
  const oauth = new FakeOAuth();
  const codes = [...(o.codes ?? [codeOf(1), codeOf(2), codeOf(3), codeOf(4)])];
  const polls = [...(o.polls ?? [tokens()])];
  const pollTimes: number[] = [];
  const codeTimes: number[] = [];
  oauth.onCode = async () => {
    codeTimes.push(clock.now() - T0);
    const c = codes.length > 1 ? codes.shift()! : codes[0]!;
    if (c instanceof AgentError) throw c;
    return c;
  };
  oauth.onPoll = async () => {
    pollTimes.push(clock.now() - T0);
    const p = polls.length > 1 ? polls.shift()! : polls[0]!;
    if (p instanceof AgentError) throw p;
    return p;
  };
  const events: PairingEvent[] = [];
  allEvents = events;
  const ac = new AbortController();
  const promise = pairDevice({ oauth, client: CLIENT, clock, random: () => 0.5, signal: ac.signal, timeoutMs: o.timeoutMs ?? 600 * S, onEvent: (e) => void events.push(e) });
  let outcome: { ok: true; grant: TokenGrant; at: number } | { ok: false; err: unknown; at: number } | undefined;
  promise.then(
    (grant) => (outcome = { ok: true, grant, at: clock.now() - T0 }),
    (err: unknown) => (outcome = { ok: false, err, at: clock.now() - T0 }),
  );
  const failure = (): AgentError => {
    if (outcome?.ok !== false || !(outcome.err instanceof AgentError)) throw new Error(`expected an AgentError, got ${JSON.stringify(outcome)}`);
    return outcome.err;
  };
  return { clock, oauth, events, ac, pollTimes, codeTimes, outcome: () => outcome, failure, types: () => events.map((e) => e.type) };
}

// Whatever a test did, no event may carry the secret device code.
afterEach(() => {
  for (const e of allEvents) {
    expect(JSON.stringify(e)).not.toContain(SECRET);
    if (e.type === 'retrying') expect(`${e.error.message} ${JSON.stringify(e.error.details)}`).not.toContain(SECRET);
    if (e.type === 'code') expect(Object.values(e.code)).not.toContainEqual(expect.stringContaining(SECRET));
  }
});

describe('the happy path', () => {
  test('pending, pending, then tokens: polled every interval, the code shown without its device code', async () => {
    const h = run({ polls: [pending, pending, tokens()] });
    await h.clock.advance(60 * S);
    expect(h.outcome()).toEqual({ ok: true, grant: grantOf('acc-paired-000001', 'ref-paired-000001'), at: 15 * S });
    expect(h.pollTimes).toEqual([5 * S, 10 * S, 15 * S]);
    expect(h.oauth.calls.filter((c) => c.op === 'poll').every((c) => c.arg === `${SECRET}-1`)).toBe(true);
    expect(h.types()).toEqual(['code', 'waiting', 'waiting']);
    const { deviceCode: _secret, ...shown } = codeOf(1);
    expect(h.events[0]).toEqual({ type: 'code', code: { ...shown, expiresAt: T0 + 120 * S } });
    expect(h.events[1]).toEqual({ type: 'waiting', remainingSeconds: 115 });
  });

  test('slow_down adds 5 s to the interval each time (RFC 8628)', async () => {
    const h = run({ polls: [slowDown, slowDown, pending, tokens()] });
    await h.clock.advance(120 * S);
    expect(h.pollTimes).toEqual([5 * S, 15 * S, 30 * S, 45 * S]);
    expect(h.events.filter((e) => e.type === 'slow-down')).toEqual([
      { type: 'slow-down', intervalSeconds: 10 },
      { type: 'slow-down', intervalSeconds: 15 },
    ]);
    expect(h.outcome()?.ok).toBe(true);
  });

  test('an interval under 1 s is polled at 1 s, not in a busy loop', async () => {
    const h = run({ codes: [codeOf(1, { intervalSeconds: 0 })], polls: [pending, pending, tokens()] });
    await h.clock.advance(10 * S);
    expect(h.pollTimes).toEqual([1 * S, 2 * S, 3 * S]);
  });
});

describe('an expired code is replaced', () => {
  test('expired_token: a new code at once, a second code event, polling the new device code', async () => {
    const h = run({ polls: [pending, expired, pending, tokens()] });
    await h.clock.advance(60 * S);
    expect(h.codeTimes).toEqual([0, 10 * S]);
    expect(h.types()).toEqual(['code', 'waiting', 'code', 'waiting']);
    const shown = h.events.filter((e) => e.type === 'code').map((e) => (e.type === 'code' ? e.code.userCode : ''));
    expect(shown).toEqual(['123451', '123452']);
    expect(h.oauth.calls.filter((c) => c.op === 'poll').map((c) => c.arg)).toEqual([`${SECRET}-1`, `${SECRET}-1`, `${SECRET}-2`, `${SECRET}-2`]);
    expect(h.pollTimes).toEqual([5 * S, 10 * S, 15 * S, 20 * S]);
    expect(h.outcome()?.ok).toBe(true);
  });

  test('local expiry passing: no poll of the dead code, a new one is requested', async () => {
    const h = run({ codes: [codeOf(1, { expiresInSeconds: 12 }), codeOf(2)], polls: [pending, pending, tokens()] });
    await h.clock.advance(60 * S);
    expect(h.codeTimes).toEqual([0, 15 * S]);
    expect(h.oauth.calls.filter((c) => c.op === 'poll').map((c) => c.arg)).toEqual([`${SECRET}-1`, `${SECRET}-1`, `${SECRET}-2`]);
    expect(h.types().filter((t) => t === 'code')).toHaveLength(2);
    expect(h.outcome()?.ok).toBe(true);
  });

  test('a transient failure asking for the second code is retried with a retrying event', async () => {
    const h = run({ codes: [codeOf(1), networkDown('POST /v2/auth/device/code'), codeOf(2)], polls: [expired, tokens()] });
    await h.clock.advance(120 * S);
    expect(h.codeTimes.length).toBe(3);
    expect(h.types()).toEqual(['code', 'retrying', 'code']);
    expect(h.outcome()?.ok).toBe(true);
  });
});

describe('refusals end the pairing', () => {
  test('invalid_grant: AgentError unauthorized (77), no further poll', async () => {
    const h = run({ polls: [pending, oauthRefusal('invalid_grant')] });
    await h.clock.advance(60 * S);
    const e = h.failure();
    expect(e.kind).toBe('unauthorized');
    expect(e.exitCode).toBe(77);
    expect(h.pollTimes).toEqual([5 * S, 10 * S]);
  });

  test('invalid_client while polling: kind config (78)', async () => {
    const h = run({ polls: [oauthRefusal('invalid_client')] });
    await h.clock.advance(60 * S);
    expect(h.failure().kind).toBe('config');
    expect(h.failure().exitCode).toBe(78);
  });

  test('the very first code request failing throws at once, even a transient failure', async () => {
    for (const err of [networkDown('POST /v2/auth/device/code'), oauthRefusal('invalid_client'), new AgentError('server', 'POST /v2/auth/device/code: 503', { status: 503 })]) {
      const h = run({ codes: [err] });
      await flushMicrotasks();
      expect(h.outcome()).toEqual({ ok: false, err, at: 0 });
      expect(h.events).toEqual([]);
      expect(h.clock.pendingCount).toBe(0);
    }
  });
});

describe('transient errors while polling', () => {
  test('network and 5xx: a retrying event each, polling goes on at the interval', async () => {
    const h = run({ polls: [networkDown(), new AgentError('server', 'POST /v2/auth/token: 502', { status: 502 }), pending, tokens()] });
    await h.clock.advance(60 * S);
    expect(h.pollTimes).toEqual([5 * S, 10 * S, 15 * S, 20 * S]);
    expect(h.types()).toEqual(['code', 'retrying', 'retrying', 'waiting']);
    expect(h.outcome()?.ok).toBe(true);
  });

  test('a 429 with Retry-After widens the interval to it', async () => {
    const h = run({ polls: [new AgentError('rate-limited', 'POST /v2/auth/token: 429', { status: 429, retryAfterMs: 20 * S }), pending, tokens()] });
    await h.clock.advance(90 * S);
    expect(h.pollTimes).toEqual([5 * S, 25 * S, 45 * S]);
  });
});

describe('the overall time limit', () => {
  test('nobody approves: AgentError timeout (exit 75) at timeoutMs, no poll after it', async () => {
    const h = run({ polls: [pending], timeoutMs: 30 * S });
    await h.clock.advance(10 * 60 * S);
    const e = h.failure();
    expect(e.kind).toBe('timeout');
    expect(e.exitCode).toBe(75);
    expect(h.outcome()?.at).toBe(30 * S);
    expect(h.pollTimes).toEqual([5 * S, 10 * S, 15 * S, 20 * S, 25 * S]);
    expect(h.clock.pendingCount).toBe(0);
  });

  test('codes are replaced until the limit, then timeout', async () => {
    const h = run({ polls: [pending], timeoutMs: 300 * S });
    await h.clock.advance(10 * 60 * S);
    expect(h.failure().kind).toBe('timeout');
    expect(h.outcome()?.at).toBe(300 * S);
    expect(h.codeTimes).toEqual([0, 120 * S, 240 * S]);
    expect(Math.max(...h.pollTimes)).toBeLessThan(300 * S);
  });
});

describe('cancellation', () => {
  test('aborting while waiting rejects at once with the signal reason, leaving no timer', async () => {
    const h = run({ polls: [pending] });
    await h.clock.advance(7 * S);
    const reason = new Error('SIGINT');
    h.ac.abort(reason);
    await flushMicrotasks();
    expect(h.outcome()).toEqual({ ok: false, err: reason, at: 7 * S });
    expect(h.clock.pendingCount).toBe(0);
  });

  test('aborting while a poll is in flight rejects with the signal reason', async () => {
    const h = run();
    h.oauth.onPoll = (_code, signal) =>
      new Promise<PollOutcome>((_resolve, reject) => signal?.addEventListener('abort', () => reject(new AgentError('network', 'POST /v2/auth/token: aborted')), { once: true }));
    await h.clock.advance(5 * S);
    expect(h.oauth.count('poll')).toBe(1);
    expect(h.oauth.calls.at(-1)?.signal).toBe(h.ac.signal);
    const reason = new Error('SIGTERM');
    h.ac.abort(reason);
    await flushMicrotasks();
    expect(h.outcome()).toEqual({ ok: false, err: reason, at: 5 * S });
  });

  test('aborting while retrying the second code request rejects with the signal reason', async () => {
    const h = run({ codes: [codeOf(1), networkDown('POST /v2/auth/device/code')], polls: [expired] });
    await h.clock.advance(5 * S);
    expect(h.types()).toEqual(['code', 'retrying']);
    const reason = new Error('SIGINT');
    h.ac.abort(reason);
    await flushMicrotasks();
    expect(h.outcome()).toEqual({ ok: false, err: reason, at: 5 * S });
  });
});

test('codeFields: a code in the service\'s own names for every output, the name only when given, never the device code', () => {
  const { deviceCode: _secret, name: _name, ...shown } = codeOf(1);
  const fields = codeFields({ ...shown, expiresAt: T0 });
  expect(fields).toEqual({ user_code: '123451', verification_uri: 'https://svc.example/pair', verification_uri_complete: 'https://svc.example/pair?user_code=123451', expires_in: 120, interval: 5 });
  expect(codeFields({ ...shown, name: 'Cam 7', verificationUriComplete: null, expiresAt: T0 })).toMatchObject({ name: 'Cam 7', verification_uri_complete: null });
  expect(JSON.stringify(codeFields({ ...codeOf(2), expiresAt: T0 } as never))).not.toContain(SECRET);
});
