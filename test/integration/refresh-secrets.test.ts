// No secret in anything the daemon writes outside the credentials file, at
// --log-level trace, through the refresh paths (test/cli/secrets.test.ts
// covers the commands): refreshes ahead of expiry, a 401 answered by a
// refresh, and a refused refresh. Searched: all of stdout and stderr, every
// `status --json` output, and every version of every file in the runtime
// dir, for every token the fake issued that the test could see, the client
// secret, and any string with the fake's secret prefixes (fca_ access, fcr_
// refresh, fcs_ client secret, fcd_ device code: secret() in
// test/fake-cloud/state.ts), which catches tokens the test never saw.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { status, waitFor } from './agent-process.js';
import { useCrashSuite } from './crash-suite.js';
import { HEARTBEAT_PATH, TOKEN_PATH, credentialsFile, reachState, startRefreshingAgent, writeClientSecret, writeCredentials } from './refresh-harness.js';

/** 100: a request's 30 agent s are 300 real ms, which a loaded machine's round trip stays under (at 300 a refresh answered after 100 ms was lost, and the unit needed pairing). */
const SCALE = 100;
const LIFETIME_S = 120;
const SECRET_PREFIX = /fc[arsd]_[A-Za-z0-9_-]*/;

const suite = useCrashSuite();

describe('refresh paths at --log-level trace', () => {
  it('print no token and no client secret, anywhere', async () => {
    const c = await suite.cloud({ timeScale: SCALE, tokenLifetimeSeconds: LIFETIME_S });
    const d = suite.dirs();
    const device = c.devices[0]!;
    const secretFile = writeClientSecret(d, c.clientSecret);
    writeCredentials(d, device, LIFETIME_S);
    const agent = startRefreshingAgent({ cloud: c, device, dirs: d, timeScale: SCALE, secretFile, env: { C2C_LOG_LEVEL: 'trace' } });

    // Everything to search, and every token the test can see.
    const texts = new Map<string, string>();
    const known = new Set<string>([c.clientSecret, device.accessToken, device.refreshToken]);
    let versions = 0;
    const collect = (): void => {
      try {
        const creds = JSON.parse(readFileSync(credentialsFile(d), 'utf8')) as Record<string, string>;
        known.add(creds.access_token!);
        known.add(creds.refresh_token!);
      } catch {
        // replaced under us: the next poll reads it
      }
      if (!existsSync(d.runtimeDir)) return;
      for (const name of readdirSync(d.runtimeDir)) {
        try {
          const text = readFileSync(join(d.runtimeDir, name), 'utf8');
          if (![...texts.values()].includes(text)) texts.set(`runtime ${name} #${versions++}`, text);
        } catch {
          // gone between the listing and the read (a temp file renamed)
        }
      }
    };
    const poll = setInterval(collect, 10);
    const st = async (): Promise<void> => {
      const r = await status(d, c.url, SCALE);
      texts.set(`status #${versions++}`, JSON.stringify(r.json) + r.stderr);
    };
    const okTokens = () => c.journal.filter((e) => e.method === 'POST' && e.path === TOKEN_PATH && e.status === 200).length;

    try {
      // Refreshes ahead of expiry.
      await reachState({ cloud: c, dirs: d, timeScale: SCALE, agent, state: 'online', timeoutMs: 15_000 });
      await waitFor('three refreshes', () => okTokens() >= 3, 15_000);
      await st();

      // A heartbeat answered 401: a refresh (its own, or one under way), then GET /v2/devices/me
      // confirms the new pair (the periodic re-verify is an agent hour away: this GET is the confirm).
      const fault = c.control.addFault({ kind: 'status', status: 401, method: 'POST', path: HEARTBEAT_PATH, count: 1 });
      await waitFor('the 401, a refresh, and the confirming GET', () => {
        const hit = c.journal.findIndex((e) => e.faults?.includes('status'));
        const refreshed = hit < 0 ? -1 : c.journal.findIndex((e, i) => i > hit && e.path === TOKEN_PATH && e.status === 200);
        return refreshed > 0 && c.journal.some((e, i) => i > refreshed && e.path === '/v2/devices/me' && e.status === 200);
      }, 15_000);
      expect(c.control.listFaults().find((f) => f.id === fault.id)?.hits).toBe(1);
      await st();

      // A refused refresh: once a heartbeat with the new pair was accepted (a 401 right after a
      // refresh would end it without asking again), the person revokes; the next 401's refresh is refused.
      const confirmed = c.journal.length;
      await waitFor('a heartbeat accepted with the new pair', () => c.journal.slice(confirmed).some((e) => e.path === HEARTBEAT_PATH && e.status === 204), 15_000);
      c.control.revokeTokens(device.id);
      await reachState({ cloud: c, dirs: d, timeScale: SCALE, agent, state: 'needs-pairing', timeoutMs: 15_000 });
      await waitFor('the refused refresh', () => c.journal.some((e) => e.path === TOKEN_PATH && e.status === 400), 15_000);
      await st();
      agent.child.kill('SIGTERM');
      expect(await agent.exited).toEqual({ code: 0, signal: null });
      collect();
      await st();
    } finally {
      clearInterval(poll);
    }
    texts.set('daemon stdout and stderr', agent.all());

    // The paths really ran, and at trace level the OAuth calls were logged in detail.
    const lines = agent.lines();
    expect(lines.filter((l) => l.msg === 'access token refreshed').length).toBeGreaterThanOrEqual(4);
    expect(lines.filter((l) => String(l.msg).startsWith('needs pairing: the service refused the refresh token'))).toHaveLength(1);
    expect(lines.some((l) => l.msg === 'http detail' && (l.request as { path?: string } | undefined)?.path === TOKEN_PATH)).toBe(true);
    expect(lines.filter((l) => l.level === 10).length).toBeGreaterThan(10);
    expect(known.size).toBeGreaterThanOrEqual(2 + 2 * 4);
    expect(versions).toBeGreaterThan(3);

    for (const [where, text] of texts) {
      expect({ where, prefixed: SECRET_PREFIX.exec(text)?.[0]?.slice(0, 6) }).toEqual({ where, prefixed: undefined });
      for (const secret of known) expect({ where, found: text.includes(secret) }).toEqual({ where, found: false });
    }
  }, 90_000);
});
