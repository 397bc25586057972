// What the daemon says once when it starts about a setting a camera cannot do
// without (issue 29): no firmware version means the service is told 0.0.0 and
// the generic profile runs, which a person must hear about, once, and not on
// a camera that names its version.
import { afterEach, describe, expect, it } from '@jest/globals';
import { MINUTE, Rig } from './rig.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const firmwareWarnings = (r: Rig) => r.lines.filter((l) => l.level === 40 && l.msg.startsWith('no firmware version set'));

describe('start-up warnings', () => {
  it('no firmware version: one warning naming 0.0.0 and the profile, however many heartbeats follow', async () => {
    const r = (rig = await Rig.up());
    r.firmware = undefined;
    r.start();
    await r.until('two heartbeats', () => r.cloud.referee(r.device.id).successfulHeartbeats >= 2, 15 * MINUTE);
    const warned = firmwareWarnings(r);
    expect(warned).toHaveLength(1);
    expect(warned[0]!.msg).toContain('sending 0.0.0, profile generic');
    expect(warned[0]!.msg).toContain('firmwareVersion or firmwareVersionFile');
  });

  it('a firmware version given (the rig gives one, as a camera does): no such warning', async () => {
    const r = (rig = await Rig.up());
    r.start();
    await r.until('a heartbeat', () => r.cloud.referee(r.device.id).successfulHeartbeats >= 1, 15 * MINUTE);
    expect(firmwareWarnings(r)).toEqual([]);
  });
});
