// POST/DELETE /v1/pair and POST /v1/unpair as the handler map serves them:
// the code's fields and nothing else, refusals with the agent's error kind
// and a fitting status, bodies checked before the daemon is asked.
import { describe, expect, it } from '@jest/globals';
import type { CancelResult, ShownCodeFields } from '../../agent/auth/daemon-pairing.js';
import type { Unpaired } from '../../agent/auth/revocation.js';
import { AgentError } from '../../agent/lib/errors.js';
import { ApiError, HandlerMap, type JsonAnswer } from '../../agent/localapi/handlers.js';
import { registerPairHandlers } from '../../agent/auth/pair-handlers.js';
import { PAIRING_TIMEOUT_MAX_MS } from '../../agent/lib/timing.js';

const CODE: ShownCodeFields = { phase: 'code', user_code: '123456', verification_uri: 'https://svc.example/pair', verification_uri_complete: 'https://svc.example/pair?user_code=123456', expires_in: 120, interval: 5 };

function routes(p: { begin?: (t?: number) => Promise<ShownCodeFields>; cancel?: () => CancelResult; unpair?: (local: boolean) => Promise<Unpaired> }) {
  const calls: unknown[][] = [];
  const map = new HandlerMap();
  registerPairHandlers(map, {
    pairing: {
      begin: async (t?: number) => (calls.push(['begin', t]), (p.begin ?? (async () => CODE))(t)),
      cancel: () => (calls.push(['cancel']), (p.cancel ?? (() => 'cancelled'))()),
      unpair: async (local: boolean) => (calls.push(['unpair', local]), (p.unpair ?? (async () => ({ revoked: true, removed: true, warnings: [] })))(local)),
    },
  });
  const call = async (method: string, path: string, body?: unknown): Promise<JsonAnswer | ApiError> => {
    const m = map.match(method, path);
    if (m.kind !== 'found') throw new Error(`${method} ${path} not served`);
    try {
      return (await m.handler({ method, path, params: m.params, query: new URLSearchParams(), body })) as JsonAnswer;
    } catch (err) {
      if (err instanceof ApiError) return err;
      throw err;
    }
  };
  return { call, calls, map };
}

describe('pair handlers', () => {
  it('are write routes', () => {
    expect(routes({}).map.list()).toEqual(['POST /v1/pair (write)', 'DELETE /v1/pair (write)', 'POST /v1/unpair (write)']);
  });

  it('POST /v1/pair: 202 with the code fields (no phase), timeoutSeconds passed on in ms', async () => {
    const r = routes({});
    const { phase: _phase, ...fields } = CODE;
    expect(await r.call('POST', '/v1/pair', { timeoutSeconds: 30 })).toEqual({ status: 202, body: fields });
    expect(await r.call('POST', '/v1/pair')).toEqual({ status: 202, body: fields });
    expect(r.calls).toEqual([['begin', 30_000], ['begin', undefined]]);
  });

  it.each([[{ timeoutSeconds: 0 }], [{ timeoutSeconds: 'x' }], [{ timeoutSeconds: 1e9 }], [[1]], ['text']])('POST /v1/pair with %j: 400, the daemon not asked', async (body) => {
    const r = routes({});
    expect(await r.call('POST', '/v1/pair', body)).toMatchObject({ status: 400, kind: 'bad-request' });
    expect(r.calls).toEqual([]);
  });

  it("POST /v1/pair: timeoutSeconds up to pair --timeout's bound is taken, one second past it is 400 naming the bound", async () => {
    const r = routes({});
    const max = PAIRING_TIMEOUT_MAX_MS / 1000;
    expect(await r.call('POST', '/v1/pair', { timeoutSeconds: max })).toMatchObject({ status: 202 });
    expect(await r.call('POST', '/v1/pair', { timeoutSeconds: max + 1 })).toMatchObject({ status: 400, kind: 'bad-request', message: expect.stringContaining(`at most ${max}`) });
    expect(r.calls).toEqual([['begin', PAIRING_TIMEOUT_MAX_MS]]);
  });

  it.each([
    ['config', 409],
    ['network', 503],
    ['unauthorized', 403],
    ['server', 502],
    ['timeout', 504],
    ['disk', 507],
  ] as const)('a refusal of kind %s: status %i, the kind and message kept', async (kind, status) => {
    const r = routes({ begin: async () => { throw new AgentError(kind, `refused: ${kind}`); } });
    expect(await r.call('POST', '/v1/pair', {})).toMatchObject({ status, kind, message: `refused: ${kind}` });
  });

  it('DELETE /v1/pair: cancelled, not pairing (200, false with a reason), too late (409)', async () => {
    expect(await routes({ cancel: () => 'cancelled' }).call('DELETE', '/v1/pair')).toEqual({ status: 200, body: { cancelled: true } });
    expect(await routes({ cancel: () => 'not-pairing' }).call('DELETE', '/v1/pair')).toEqual({ status: 200, body: { cancelled: false, reason: 'no pairing is under way' } });
    expect(await routes({ cancel: () => 'too-late' }).call('DELETE', '/v1/pair')).toMatchObject({ status: 409, kind: 'conflict' });
  });

  it('POST /v1/unpair: local passed on; a bad local is 400; a refusal keeps its kind', async () => {
    const r = routes({});
    expect(await r.call('POST', '/v1/unpair', { local: true })).toEqual({ status: 200, body: { revoked: true, removed: true, warnings: [] } });
    expect(await r.call('POST', '/v1/unpair')).toMatchObject({ status: 200 });
    expect(await r.call('POST', '/v1/unpair', { local: 'yes' })).toMatchObject({ status: 400 });
    expect(r.calls).toEqual([['unpair', true], ['unpair', false]]);
    const refused = routes({ unpair: async () => { throw new AgentError('config', 'cannot revoke the authorization at the service, so nothing was forgotten: no client secret'); } });
    expect(await refused.call('POST', '/v1/unpair', {})).toMatchObject({ status: 409, kind: 'config', message: expect.stringContaining('nothing was forgotten') });
  });
});
