// Hardware facts: the real probe answers with well-typed fields and copes with
// paths that do not exist; the forking facts are read once per probe; a failing
// or hanging systeminformation yields the facts it could get.
import { afterAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createHardwareProbe, hardwareFacts, type HardwareFacts, type SystemInfoLike } from '../../agent/channels/hardware.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const dir = mkdtempSync(path.join(tmpdir(), 'c2c-hw-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const optionalString = (v: unknown): void => expect(v === undefined || (typeof v === 'string' && v !== '' && !v.includes('\n'))).toBe(true);

function expectTyped(f: HardwareFacts): void {
  for (const k of ['manufacturer', 'model', 'serial'] as const) optionalString(f[k]);
  for (const k of ['distro', 'release', 'codename', 'kernel', 'arch'] as const) optionalString(f.os?.[k]);
  for (const d of f.usb ?? []) {
    optionalString(d.name);
    expect(d.bus === undefined || Number.isInteger(d.bus)).toBe(true);
  }
  for (const d of f.audio ?? []) {
    optionalString(d.name);
    expect(d.in === undefined || typeof d.in === 'boolean').toBe(true);
  }
  // No nulls or undefined values in the JSON a command prints.
  expect(JSON.stringify(f)).not.toContain('null');
  expect(JSON.parse(JSON.stringify(f))).toEqual(f);
}

describe('hardwareFacts (real systeminformation)', () => {
  // How long it takes is not judged here: each systeminformation call is bounded (10 s), tested in agent time
  // below, and the cache by counting calls.
  test('typed fields, free space for existing and missing paths, copies of one answer', async () => {
    const media = path.join(dir, 'media', 'not', 'yet');
    const facts = await hardwareFacts({ stateDir: dir, mediaDir: media });
    expectTyped(facts);
    expect(facts.os?.kernel).toEqual(expect.any(String));
    expect(facts.space?.stateDir).toEqual({ path: dir, freeBytes: expect.any(Number), totalBytes: expect.any(Number) });
    expect(facts.space?.stateDir?.freeBytes).toBeGreaterThan(0);
    expect(facts.space?.mediaDir).toMatchObject({ path: media, measuredAt: dir, freeBytes: expect.any(Number) });

    const second = await hardwareFacts({ stateDir: '/definitely/not/here' });
    expect(second.model).toBe(facts.model);
    expect(second.space).toEqual({ stateDir: { path: '/definitely/not/here', measuredAt: '/', freeBytes: expect.any(Number), totalBytes: expect.any(Number) } });
    // Callers get copies: editing one answer does not change the next.
    second.usb?.push({ name: 'edited' });
    delete second.os;
    const third = await hardwareFacts({ stateDir: dir });
    expect(third.usb).toEqual(facts.usb);
    expect(third.os).toEqual(facts.os);
  });
});

describe('createHardwareProbe (stand-in systeminformation)', () => {
  const osFile = path.join(dir, 'os-release');
  writeFileSync(osFile, '# comment\nNAME="Raspbian GNU/Linux"\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\nID=raspbian\n');

  const fine: SystemInfoLike = {
    system: async () => ({ manufacturer: 'Raspberry Pi Foundation', model: 'Raspberry Pi 4 Model B', serial: '10000000abcdef01' }),
    usb: async () => [{ name: 'LTC reader\nv2', vendor: 'Acme', bus: 1, deviceId: 4, removable: true }],
    audio: async () => [{ name: 'USB Audio', manufacturer: 'Behringer', in: true, out: false, id: 'x' }],
  };

  test('maps the facts, drops placeholders and odd characters, reads os-release', async () => {
    const probe = createHardwareProbe({ load: async () => ({ ...fine, system: async () => ({ manufacturer: '', model: 'Computer', serial: '-' }) }), osReleaseFiles: [path.join(dir, 'missing'), osFile] });
    const f = await probe({ stateDir: dir });
    expect(f.manufacturer).toBeUndefined();
    expect(f.model).toBeUndefined();
    expect(f.serial).toBeUndefined();
    expect(f.os).toMatchObject({ distro: 'Raspbian GNU/Linux', release: '12', codename: 'bookworm', kernel: expect.any(String) });
    expect(f.usb).toEqual([{ name: 'LTC reader v2', vendor: 'Acme', bus: 1, deviceId: 4 }]);
    expect(f.audio).toEqual([{ name: 'USB Audio', manufacturer: 'Behringer', in: true, out: false }]);
    expect(f.missing).toBeUndefined();
    expectTyped(f);
  });

  test('the forking facts are read once for the probe, free space at every call', async () => {
    const made = { load: 0, system: 0, usb: 0, audio: 0 };
    const probe = createHardwareProbe({
      load: async () => (made.load++, {
        system: () => (made.system++, fine.system()),
        usb: () => (made.usb++, fine.usb()),
        audio: () => (made.audio++, fine.audio()),
      }),
      osReleaseFiles: [osFile],
    });
    const first = await probe({ stateDir: dir });
    const second = await probe({ stateDir: '/definitely/not/here' });
    expect(made).toEqual({ load: 1, system: 1, usb: 1, audio: 1 });
    expect(second.model).toBe(first.model);
    expect(second.space?.stateDir).toMatchObject({ path: '/definitely/not/here', measuredAt: '/' });
  });

  test('a failing call leaves its facts out and names them; nothing throws', async () => {
    const probe = createHardwareProbe({
      load: async () => ({
        ...fine,
        usb: async () => {
          throw new Error('lsusb: not found');
        },
        audio: () => {
          throw new Error('sync throw');
        },
      }),
      osReleaseFiles: [osFile],
    });
    const f = await probe({ stateDir: dir });
    expect(f.model).toBe('Raspberry Pi 4 Model B');
    expect(f.usb).toBeUndefined();
    expect(f.audio).toBeUndefined();
    expect(f.missing).toEqual(['usb', 'audio']);
  });

  test('a module that cannot load still gives the OS and free space', async () => {
    const probe = createHardwareProbe({
      load: async () => {
        throw new Error('Cannot find module');
      },
      osReleaseFiles: [osFile],
    });
    const f = await probe({ stateDir: dir });
    expect(f.missing).toEqual(['system', 'usb', 'audio']);
    expect(f.os?.distro).toBe('Raspbian GNU/Linux');
    expect(f.space?.stateDir?.freeBytes).toEqual(expect.any(Number));
  });

  test('a call that hangs is given up after the limit, in agent time', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const probe = createHardwareProbe({
      clock,
      limitMs: 2_000,
      load: async () => ({ ...fine, system: () => (calls++, new Promise(() => undefined)) }),
      osReleaseFiles: [osFile],
    });
    const pending = probe({ stateDir: dir });
    // The hanging call made, so its limit is armed (before the call); the module load is a promise away.
    await until('the system call', () => calls === 1, { everyMs: 0 });
    await clock.advance(2_000);
    const f = await pending;
    expect(f.model).toBeUndefined();
    expect(f.missing).toEqual(['system']);
    expect(f.usb).toHaveLength(1);
    // Cached: the hanging call is not made again.
    await probe({ stateDir: dir });
    expect(calls).toBe(1);
    expect(clock.pendingCount).toBe(0);
  });
});
