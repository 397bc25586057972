// The facts and warnings `check` derives from a Device record.
import { describe, expect, test } from '@jest/globals';
import { checkFacts, describeOffset, describeRateLimit, humanReport } from '../../agent/cli/check-report.js';
import type { Device } from '../../agent/api/types.js';
import { CLOCK_WRONG_MS } from '../../agent/lib/timing.js';

const NOW = Date.UTC(2026, 10, 22, 10, 0, 0);
const HOUR = 3_600_000;

function device(auth: Device['authorization']): Device {
  return { id: 'd1', name: 'Cam', status: 'online', project_id: 'p1', project: { id: 'p1', name: 'Shoot' }, channels: [{ id: 'c1', name: 'Main', asset_type: 'video' }], authorization: auth };
}
const allScopes = { asset_create: true, offline: true, device_connect: true };

describe('checkFacts', () => {
  test('all scopes, no expiry: no warnings', () => {
    const f = checkFacts(device({ scopes: allScopes, expires_at: null }), NOW);
    expect(f).toMatchObject({ missingScopes: [], expiresAt: null, expiresInMs: null, warnings: [] });
    expect(f.device).toEqual({
      id: 'd1',
      name: 'Cam',
      status: 'online',
      project_id: 'p1',
      project: 'Shoot',
      channels: [{ id: 'c1', name: 'Main', asset_type: 'video', status: null }],
    });
  });

  test('a missing or false scope is a warning naming it', () => {
    const f = checkFacts(device({ scopes: { asset_create: true, offline: false } }), NOW);
    expect(f.missingScopes).toEqual(['offline']);
    expect(f.warnings[0]).toContain('lacks scope offline:');
    // device_connect is shown, but pairing does not ask for it, so its absence is no warning.
    expect(checkFacts(device({ scopes: { asset_create: true, offline: true } }), NOW).warnings).toEqual([]);
  });

  test('no scopes object at all', () => {
    expect(checkFacts(device(undefined), NOW).warnings[0]).toContain('no authorization scopes');
  });

  test.each([
    [30 * HOUR, 0],
    [23 * HOUR, 1],
    [-HOUR, 1],
  ])('expires in %i ms -> %i warning(s)', (delta, count) => {
    const f = checkFacts(device({ scopes: allScopes, expires_at: new Date(NOW + delta).toISOString() }), NOW);
    expect(f.expiresInMs).toBe(delta);
    expect(f.warnings).toHaveLength(count);
    if (delta < 0) expect(f.warnings[0]).toContain('expired');
    if (delta > 0 && count > 0) expect(f.warnings[0]).toContain('expires in 23 h');
  });

  test('project_id falls back to project.id; names may be missing', () => {
    const f = checkFacts({ id: 'x', project: { id: 'p9' } }, NOW);
    expect(f.device).toMatchObject({ project_id: 'p9', project: null, name: null, channels: [] });
  });

  test('an unparseable expires_at is reported, not trusted', () => {
    expect(checkFacts(device({ scopes: allScopes, expires_at: 'soonish' }), NOW).warnings[0]).toContain("'soonish'");
  });
});

describe('human report', () => {
  test('lines for every fact, warnings last', () => {
    const facts = checkFacts(device({ scopes: { asset_create: true, offline: true }, expires_at: new Date(NOW + 2 * HOUR).toISOString() }), NOW);
    const lines = humanReport({
      facts,
      meta: { status: 200, rateLimit: { limit: 60, remaining: 59, windowMs: 60000 }, clockOffsetMs: -2500 },
      firmwareVersion: '1.2.3',
      firmwareSource: 'environment C2C_FIRMWARE_VERSION',
      profileId: 'cam-1080',
      profileName: 'Camera',
      credentialsSource: '/var/lib/c2c-agent/credentials.json',
    });
    expect(lines).toEqual(
      expect.arrayContaining([
        'paired: Cam (device d1)',
        'project: Shoot (id p1)',
        'channels: Main (c1, video)',
        'scopes: asset_create yes, offline yes, device_connect unknown',
        'firmware version sent: 1.2.3 (from environment C2C_FIRMWARE_VERSION)',
        'profile: cam-1080 (Camera)',
        'clock: service clock 2.5 s behind this unit',
        'rate limit: 59 of 60 requests left per 60 s',
      ]),
    );
    expect(lines.at(-1)).toMatch(/^warning: authorization expires in 2 h/);
  });

  test('offset and rate-limit wording', () => {
    expect(describeOffset(undefined)).toContain('no Date header');
    expect(describeOffset(125_000)).toContain('ahead of this unit (more than 60 s: check NTP)');
    expect(describeOffset(CLOCK_WRONG_MS)).not.toContain('NTP');
    expect(describeOffset(-(CLOCK_WRONG_MS + 1))).toContain('behind this unit (more than 60 s: check NTP)');
    expect(describeRateLimit({})).toBeUndefined();
  });
});
