// The STATUS= line in needs-pairing leads with what to do: the advice the
// daemon's reason ends with (with C2C_TOKEN set, the advice that can help),
// else pairing.
import { describe, expect, it } from '@jest/globals';
import { statusLine } from '../../agent/daemon/snapshot.js';
import { fitAdvice, TOKEN_IN_ENV_ADVICE } from '../../agent/lib/advice.js';
import type { DaemonSnapshot } from '../../agent/core/state.js';

const snap = (reason: string): DaemonSnapshot => ({ state: 'needs-pairing', reason }) as unknown as DaemonSnapshot;
const REFUSED = 'GET /v2/devices/me: HTTP 401 (the token was rejected; run `c2c-agent pair`)';

describe('statusLine in needs-pairing', () => {
  it('says to pair when that helps', () => {
    expect(statusLine(snap(REFUSED), 0)).toBe('needs pairing: run `c2c-agent pair`');
    expect(statusLine(snap('not paired: no credentials'), 0)).toBe('needs pairing: run `c2c-agent pair`');
  });

  it('says what can help while C2C_TOKEN wins', () => {
    expect(statusLine(snap(fitAdvice(REFUSED, true)), 0)).toBe(`needs pairing: ${TOKEN_IN_ENV_ADVICE}`);
  });
});
