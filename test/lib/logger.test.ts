// The daemon's log lines carry no secret: a field named as one (at any depth,
// in any case, in an array or an error) is replaced, and a registered value
// is cut out of the text. A line without one is written as it came.
import { describe, it, expect } from '@jest/globals';
import { createLogger } from '../../agent/lib/logger.js';
import { registerSecret, withoutSecretKeys, REDACTED } from '../../agent/lib/secrets.js';

function capture(): { lines: Record<string, unknown>[]; raw: string[]; logger: ReturnType<typeof createLogger> } {
  const raw: string[] = [];
  const logger = createLogger('debug', { write: (l: string) => void raw.push(l) });
  return { raw, logger, get lines() { return raw.map((l) => JSON.parse(l) as Record<string, unknown>); } };
}

describe('log lines', () => {
  it('replace a secret field at the top, nested, in arrays, whatever its case', () => {
    const c = capture();
    c.logger.info({
      token: 'tok-top-1', Authorization: 'Bearer abc',
      reply: { access_token: 'at-1', refreshToken: 'rt-1', expires_in: 3600, nested: { deep: { client_secret: 'cs-1' } } },
      headers: { authorization: 'Bearer xyz', 'x-client-version': '1.6.0' },
      grants: [{ device_code: 'dc-1', user_code: 'ABCD-EFGH' }],
    }, 'a line');
    const [line] = c.lines;
    expect(line).toMatchObject({
      token: REDACTED, Authorization: REDACTED,
      reply: { access_token: REDACTED, refreshToken: REDACTED, expires_in: 3600, nested: { deep: { client_secret: REDACTED } } },
      headers: { authorization: REDACTED, 'x-client-version': '1.6.0' },
      grants: [{ device_code: REDACTED, user_code: 'ABCD-EFGH' }],
      msg: 'a line',
    });
    for (const s of ['tok-top-1', 'Bearer abc', 'at-1', 'rt-1', 'cs-1', 'Bearer xyz', 'dc-1']) expect(c.raw[0]).not.toContain(s);
  });

  it('replace a secret field of a logged error, and leave the caller\'s objects untouched', () => {
    const c = capture();
    const err = Object.assign(new TypeError('refused', { cause: new Error('socket hang up') }), { accessToken: 'err-token-1', status: 401, details: { token: 'err-token-2' } });
    const fields = { reply: { refresh_token: 'rt-2' } };
    c.logger.error({ err, ...fields }, 'failed');
    // Still written as the error it is: its type, and its cause in the message and stack.
    expect(c.lines[0]).toMatchObject({ err: { type: 'TypeError', message: 'refused: socket hang up', accessToken: REDACTED, status: 401, details: { token: REDACTED } }, reply: { refresh_token: REDACTED } });
    expect((c.lines[0]?.err as { stack: string }).stack).toContain('caused by: Error: socket hang up');
    expect(c.raw[0]).not.toContain('err-token-');
    expect(fields.reply.refresh_token).toBe('rt-2');
    expect(err.accessToken).toBe('err-token-1');
  });

  it('replace a secret field of a class instance, as JSON would write it, and leave what writes itself (toJSON)', () => {
    class Grant {
      readonly kind = 'device';
      constructor(readonly refresh_token: string) {}
    }
    const c = capture();
    c.logger.info({ grant: new Grant('rt-in-a-class'), at: new Date(0), bytes: Buffer.from('ab') }, 'kept');
    expect(c.raw[0]).not.toContain('rt-in-a-class');
    expect(c.lines[0]).toMatchObject({ grant: { kind: 'device', refresh_token: REDACTED }, at: '1970-01-01T00:00:00.000Z', bytes: { type: 'Buffer', data: [97, 98] } });
  });

  it('leave an `err` that is text as text (most lines give an error\'s message)', () => {
    const c = capture();
    c.logger.warn({ err: 'AgentError: upload index is a FIFO' }, 'cannot read');
    expect(c.lines[0]).toMatchObject({ err: 'AgentError: upload index is a FIFO', msg: 'cannot read' });
  });

  it('cut a registered value out of the message and of any field', () => {
    registerSecret('registered-secret-value-9');
    const c = capture();
    c.logger.warn({ body: 'server said registered-secret-value-9' }, 'echo registered-secret-value-9');
    expect(c.raw[0]).not.toContain('registered-secret-value-9');
    expect(c.lines[0]).toMatchObject({ body: `server said ${REDACTED}`, msg: `echo ${REDACTED}` });
  });

  it('copy no object without a secret field', () => {
    const fields = { state: 'online', transition: { from: 'starting', to: 'online' }, list: [{ a: 1 }] };
    expect(withoutSecretKeys(fields)).toBe(fields);
    const withOne = { a: { b: [{ token: 'x' }] }, c: { d: 1 } };
    const out = withoutSecretKeys(withOne);
    expect(out).toEqual({ a: { b: [{ token: REDACTED }] }, c: { d: 1 } });
    expect(out.c).toBe(withOne.c);
    expect(withOne.a.b[0]?.token).toBe('x');
  });
});
