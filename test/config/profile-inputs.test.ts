// Real-time logging's fields of a firmware profile (issue 31): a channel's
// inputs, the profile's inputDevice and timecode. What is accepted comes out
// resolved (key names to codes, the rate reduced); what is not is one line,
// exit 78, naming the file, the field and the value.
import { describe, expect, it, jest } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseProfile } from '../../agent/config/profiles.js';
import { profileHasInputs } from '../../agent/config/types.js';
import { keyCodeOf } from '../../agent/lib/key-codes.js';
import { configFailure, tempDir, VALID_PROFILE } from './helpers.js';

const FILE = 'profiles/pi.json';
const withInputs = (patch: (p: Record<string, any>) => void = () => undefined): string => {
  const p = structuredClone(VALID_PROFILE) as Record<string, any>;
  p.inputDevice = 'dev/input/by-path/platform-gpio-keys-event';
  p.timecode = { rate: '24000/1001' };
  p.channels[0].inputs = [
    { index: 0, name: 'Good take', key: 'KEY_ENTER' },
    { index: 1, name: 'Bad take', key: 2 },
    { index: 7, name: 'Slate' },
  ];
  patch(p);
  return JSON.stringify(p);
};
const fails = (text: string): string => {
  const err = configFailure(() => parseProfile(text, FILE));
  expect(err.exitCode).toBe(78);
  expect(err.message.startsWith(`${FILE}: `)).toBe(true);
  expect(err.message).not.toContain('\n');
  return err.message.slice(FILE.length + 2);
};

describe('inputs, inputDevice and timecode in a profile', () => {
  it('come out resolved: key names to codes, the rate as a fraction, drop-frame off by default', () => {
    const p = parseProfile(withInputs(), FILE);
    expect(p.channels[0]!.inputs).toEqual([
      { index: 0, name: 'Good take', key: 28, keyName: 'KEY_ENTER' },
      { index: 1, name: 'Bad take', key: 2, keyName: '2' },
      { index: 7, name: 'Slate' },
    ]);
    expect(p.inputDevice).toBe('dev/input/by-path/platform-gpio-keys-event');
    expect(p.timecode).toEqual({ rate: { num: 24000, den: 1001 }, dropFrame: false });
    expect(profileHasInputs(p)).toBe(true);
    expect(parseProfile(withInputs((x) => (x.timecode = { rate: 25 })), FILE).timecode).toEqual({ rate: { num: 25, den: 1 }, dropFrame: false });
    expect(parseProfile(withInputs((x) => (x.timecode = { rate: '30000/1001', dropFrame: true })), FILE).timecode).toEqual({ rate: { num: 30000, den: 1001 }, dropFrame: true });
  });

  it('are optional: a profile without them has no inputs and costs nothing', () => {
    const p = parseProfile(JSON.stringify(VALID_PROFILE), FILE);
    expect(p.channels[0]!.inputs).toBeUndefined();
    expect(p.inputDevice).toBeUndefined();
    expect(p.timecode).toBeUndefined();
    expect(profileHasInputs(p)).toBe(false);
    // Inputs with no key need no device: pressed through the local API and the CLI only.
    const apiOnly = parseProfile(withInputs((x) => {
      delete x.inputDevice;
      x.channels[0].inputs = [{ index: 0, name: 'Good take' }];
    }), FILE);
    expect(apiOnly.channels[0]!.inputs).toEqual([{ index: 0, name: 'Good take' }]);
  });

  it('knows every key name of linux/input-event-codes.h, aliases too', () => {
    expect(keyCodeOf('KEY_ESC')).toBe(1);
    expect(keyCodeOf('KEY_RECORD')).toBe(167);
    expect(keyCodeOf('BTN_0')).toBe(0x100);
    expect(keyCodeOf('BTN_A')).toBe(0x130);
    expect(keyCodeOf('BTN_SOUTH')).toBe(0x130);
    expect(keyCodeOf('BTN_TRIGGER_HAPPY40')).toBe(0x2e7);
    expect(keyCodeOf('KEY_NOPE')).toBeUndefined();
  });

  it("agrees with this machine's linux/input-event-codes.h on every KEY_ and BTN_ name, where it has one", () => {
    const header = '/usr/include/linux/input-event-codes.h';
    if (!existsSync(header)) return;
    const codes = new Map<string, number>();
    for (const m of readFileSync(header, 'utf8').matchAll(/^#define\s+((?:KEY|BTN)_\w+)\s+(\S+)/gm)) {
      const [, name, value] = m as unknown as [string, string, string];
      if (/_(MAX|CNT)$/.test(name)) continue;
      const code = /^(0x[0-9a-f]+|\d+)$/i.test(value) ? Number(value) : codes.get(value);
      if (code !== undefined) codes.set(name, code);
    }
    expect(codes.size).toBeGreaterThan(500);
    const wrong = [...codes].filter(([name, code]) => keyCodeOf(name) !== code);
    expect(wrong).toEqual([]);
  });

  it.each([
    [(x: any) => (x.channels[0].inputs[1].index = 0), '/channels/0/inputs/1/index 0 duplicates /channels/0/inputs/0/index (an index is one input of the channel)'],
    [(x: any) => (x.channels[0].inputs[0].index = 100), '/channels/0/inputs/0/index must be <= 99, got 100'],
    [(x: any) => (x.channels[0].inputs[0].index = -1), '/channels/0/inputs/0/index must be >= 0, got -1'],
    [(x: any) => (x.channels[0].inputs[0].index = 1.5), '/channels/0/inputs/0/index must be integer, got 1.5'],
    [(x: any) => (x.channels[0].inputs[0].name = ''), '/channels/0/inputs/0/name must NOT have fewer than 1 characters'],
    [(x: any) => delete x.channels[0].inputs[0].name, '/channels/0/inputs/0/name is required'],
    [(x: any) => (x.channels[0].inputs[0].colour = 'red'), "/channels/0/inputs/0 has unknown field 'colour'"],
    [(x: any) => (x.channels[0].inputs[0].key = 'KEY_enter'), "/channels/0/inputs/0/key must be a Linux key code (0 to 767) or a KEY_ or BTN_ name such as KEY_ENTER, got 'KEY_enter'"],
    [(x: any) => (x.channels[0].inputs[0].key = 1000), '/channels/0/inputs/0/key must be a Linux key code (0 to 767) or a KEY_ or BTN_ name such as KEY_ENTER, got 1000'],
    [(x: any) => (x.channels[0].inputs[0].key = 'KEY_NOPE'), "/channels/0/inputs/0/key 'KEY_NOPE' is not a Linux key name (linux/input-event-codes.h): give its number, or a name such as KEY_ENTER or BTN_0"],
    [(x: any) => (x.channels[0].inputs[1].key = 28), '/channels/0/inputs/1/key 28 is also /channels/0/inputs/0/key: a key presses one input'],
    [(x: any) => delete x.inputDevice, '/channels/0/inputs/0/key KEY_ENTER (28) needs /inputDevice, the input device its presses are read from (dev/input/by-path/platform-gpio-keys-event on a Raspberry Pi)'],
    [(x: any) => (x.inputDevice = '/dev/input/event0'), "/inputDevice must match pattern"],
    [(x: any) => (x.inputDevice = 'dev/../etc/passwd'), '/inputDevice must match pattern'],
    [(x: any) => x.channels[0].inputs.forEach((i: any) => delete i.key), "/inputDevice 'dev/input/by-path/platform-gpio-keys-event' is set but no input has a key to read from it"],
    [(x: any) => (x.timecode = { rate: '23.976' }), `/timecode/rate must be a whole number of frames per second (1 to 99) or a fraction "N/D" such as "24000/1001", got '23.976'`],
    [(x: any) => (x.timecode = { rate: 0 }), '/timecode/rate must be a whole number of frames per second (1 to 99) or a fraction "N/D" such as "24000/1001", got 0'],
    [(x: any) => (x.timecode = { rate: '240/1' }), '/timecode/rate "240/1" is over 99 frames per second'],
    [(x: any) => (x.timecode = { rate: '24/0' }), '/timecode/rate "24/0" is not a frame rate: numerator and denominator must be whole numbers above 0'],
    [(x: any) => (x.timecode = { rate: 25, dropFrame: true }), "/timecode/dropFrame is true but /timecode/rate '25' has no drop-frame (only 30000/1001 and 60000/1001 do)"],
    [(x: any) => (x.timecode = { dropFrame: false }), '/timecode/rate is required'],
  ])('refused: %#', (patch, message) => {
    expect(fails(withInputs(patch))).toContain(message);
  });

  it('a key named once in each of two channels is still one key: refused', () => {
    const text = withInputs((x) => x.channels.push({ key: 'aux', name: 'Aux', assetType: 'video', deviceModelId: 'm-2', detect: { anyPath: ['dev/video1'] }, inputs: [{ index: 0, name: 'Mark', key: 'KEY_ENTER' }] }));
    expect(fails(text)).toBe('/channels/1/inputs/0/key KEY_ENTER (28) is also /channels/0/inputs/0/key: a key presses one input');
  });

  it('`profiles` shows them, in lines and in --json', async () => {
    const tmp = tempDir('c2c-profile-inputs-');
    const out: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    try {
      mkdirSync(path.join(tmp.dir, 'p'));
      writeFileSync(path.join(tmp.dir, 'p', 'pi.json'), withInputs());
      writeFileSync(path.join(tmp.dir, 'none.json'), '{}\n');
      const { run } = await import('../../agent/cli/profiles.js');
      const ctx = (json: boolean) => ({ name: 'profiles', values: { firmware: '1.2.3', json }, positionals: [], settingsOptions: { profilesDir: path.join(tmp.dir, 'p') }, json, env: { C2C_CONFIG: path.join(tmp.dir, 'none.json') } });
      expect(await run(ctx(false))).toBe(0);
      const text = out.join('');
      expect(text).toContain('cam inputs (c2c-agent press CHANNEL INDEX; time-of-day timecode at 24000/1001; keys read from dev/input/by-path/platform-gpio-keys-event under the host root):\n');
      expect(text).toContain('  main 0: Good take (key KEY_ENTER, 28)\n  main 1: Bad take (key 2)\n  main 7: Slate\n');
      out.length = 0;
      expect(await run(ctx(true))).toBe(0);
      const doc = JSON.parse(out.join('')) as { profiles: Array<Record<string, any>> };
      expect(doc.profiles[0]!.channels[0].inputs).toEqual([
        { index: 0, name: 'Good take', key: 'KEY_ENTER', keyCode: 28 },
        { index: 1, name: 'Bad take', key: '2', keyCode: 2 },
        { index: 7, name: 'Slate' },
      ]);
      expect(doc.profiles[0]!.inputDevice).toBe('dev/input/by-path/platform-gpio-keys-event');
      expect(doc.profiles[0]!.timecode).toEqual({ rate: '24000/1001', dropFrame: false });
    } finally {
      spy.mockRestore();
      tmp.cleanup();
    }
  });
});
