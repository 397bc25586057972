import { describe, it, expect, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadProfiles, parseProfile, selectProfile, builtinProfileFiles } from '../../agent/config/profiles.js';
import type { FirmwareProfile } from '../../agent/config/types.js';
import { configFailure, tempDir, VALID_PROFILE } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCHEMA_PATH = path.join(ROOT, 'firmware-profiles/schema.json');
const GENERATOR = path.join(ROOT, 'scripts/gen-profile-validator.mjs');
const tmp = tempDir('c2c-profiles-');
afterAll(() => tmp.cleanup());

const valid = VALID_PROFILE;
const broken = (patch: (p: Record<string, any>) => void): string => {
  const p = structuredClone(valid) as Record<string, any>;
  patch(p);
  return JSON.stringify(p);
};
const parseFails = (text: string, file = 'firmware-profiles/x.json'): string => {
  const err = configFailure(() => parseProfile(text, file));
  expect(err.exitCode).toBe(78);
  expect(err.message.startsWith(`${file}: `)).toBe(true);
  expect(err.message).not.toContain('\n');
  return err.message;
};
const p = (id: string, minFirmware: string, maxFirmware?: string): FirmwareProfile =>
  ({ ...parseProfile(JSON.stringify({ ...valid, id, minFirmware }), `${id}.json`), ...(maxFirmware ? { maxFirmware } : {}) });

describe('shipped profiles', () => {
  // The validator is compiled with validateSchema: false, so a schema.json
  // that breaks the draft-07 meta-schema is caught here.
  it('schema.json is itself valid against its meta-schema, in strict mode', () => {
    const schema = JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as object;
    const ajv = new Ajv({ strict: true });
    expect(ajv.validateSchema(schema)).toBe(true);
    expect(ajv.errors ?? null).toBeNull();
    expect(() => ajv.compile(schema)).not.toThrow();
    // The same check does catch a broken one.
    expect(ajv.validateSchema({ ...schema, required: 'id' })).toBe(false);
  });

  it('the compiled validator the agent uses matches schema.json (regenerate with scripts/gen-profile-validator.mjs)', () => {
    const run = spawnSync(process.execPath, [GENERATOR, '--check'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('every shipped profile validates, and the set has the required kinds', () => {
    const profiles = loadProfiles();
    expect(Object.keys(builtinProfileFiles())).not.toContain('schema.json');
    const ids = profiles.map((x) => x.id);
    expect(ids).toEqual(expect.arrayContaining(['generic', 'cam-1080', 'audio-2ch', 'multi-av-tc', 'cam-4k']));
    expect(profiles.find((x) => x.id === 'generic')?.minFirmware).toBe('0.0.0');
    const multi = profiles.find((x) => x.id === 'multi-av-tc');
    expect(multi?.channels.map((c) => c.assetType).sort()).toEqual(['audio', 'data', 'video']);
    expect(profiles.find((x) => x.id === 'audio-2ch')?.channels).toHaveLength(2);
    for (const x of profiles) {
      expect(x.file).toBe(`firmware-profiles/${x.id}.json`);
      expect(x.heartbeat.minSeconds).toBeGreaterThanOrEqual(60);
      expect(x.heartbeat.maxSeconds).toBeLessThanOrEqual(255);
    }
  });

  it.each([
    ['0.0.0', 'generic'],
    ['0.9.9', 'generic'],
    ['1.0.0', 'cam-1080'],
    ['1.3.0', 'audio-2ch'],
    ['1.5.0', 'multi-av-tc'],
    ['1.9.9', 'multi-av-tc'],
    ['2.0.0-rc.1', 'multi-av-tc'],
    ['2.0.0', 'cam-4k'],
    ['9.0.0', 'cam-4k'],
  ])('firmware %s selects %s among overlapping shipped ranges', (fw, id) => {
    expect(selectProfile(loadProfiles(), fw).id).toBe(id);
  });
});

describe('selection', () => {
  it('the highest minimum among covering ranges wins, whatever the order', () => {
    const set = [p('a', '0.0.0'), p('c', '1.5.0', '3.0.0'), p('b', '1.0.0')];
    expect(selectProfile(set, '2.0.0').id).toBe('c');
    expect(selectProfile([...set].reverse(), '2.0.0').id).toBe('c');
    expect(selectProfile(set, '1.2.0').id).toBe('b');
  });

  it('maxFirmware is exclusive', () => {
    const set = [p('a', '1.0.0'), p('c', '1.5.0', '3.0.0')];
    expect(selectProfile(set, '2.9.9').id).toBe('c');
    expect(selectProfile(set, '3.0.0').id).toBe('a');
  });

  it('no match is a config error naming the firmware and its source', () => {
    const err = configFailure(() => selectProfile([p('c', '1.5.0', '3.0.0')], '1.0.0', '--firmware'));
    expect(err.exitCode).toBe(78);
    expect(err.message).toBe("no firmware profile covers firmware '1.0.0' (from --firmware); profiles: c >=1.5.0 <3.0.0");
  });
});

describe('broken profiles: exit 78 naming file and field', () => {
  it('heartbeat out of bounds', () => {
    expect(parseFails(broken((x) => (x.heartbeat.minSeconds = 30)))).toBe('firmware-profiles/x.json: /heartbeat/minSeconds must be >= 60, got 30');
    expect(parseFails(broken((x) => (x.heartbeat.maxSeconds = 256)))).toContain('/heartbeat/maxSeconds must be <= 255, got 256');
    // Refused, never silently shortened: a profile's numbers are what the agent uses.
    expect(parseFails(broken((x) => (x.heartbeat.maxSeconds = 300)))).toContain('/heartbeat/maxSeconds must be <= 255, got 300');
    expect(parseFails(broken((x) => (x.heartbeat = { minSeconds: 200, maxSeconds: 100 })))).toContain('/heartbeat/minSeconds 200 must be <= /heartbeat/maxSeconds 100');
  });

  it('realtimeUploads: a boolean a model may set, absent by default; anything else refused', () => {
    expect(parseProfile(JSON.stringify(valid), 'x.json').realtimeUploads).toBeUndefined();
    expect(parseProfile(JSON.stringify({ ...valid, realtimeUploads: true }), 'x.json').realtimeUploads).toBe(true);
    expect(parseFails(broken((x) => (x.realtimeUploads = 'yes')))).toContain('/realtimeUploads must be boolean');
  });

  it('wrong field type', () => {
    expect(parseFails(broken((x) => (x.channels = 'video'))))
      .toBe("firmware-profiles/x.json: /channels must be array, got 'video'");
    expect(parseFails(broken((x) => (x.heartbeat = [])))).toContain('/heartbeat must be object, got array');
  });

  it('unknown field, at top level and nested', () => {
    expect(parseFails(broken((x) => (x.heartbeatSeconds = 120)))).toBe("firmware-profiles/x.json: / has unknown field 'heartbeatSeconds'");
    expect(parseFails(broken((x) => (x.channels[0].model = 'x')))).toContain("/channels/0 has unknown field 'model'");
  });

  it('missing field, bad enum, bad detection path', () => {
    expect(parseFails(broken((x) => delete x.minFirmware))).toContain('/minFirmware is required');
    expect(parseFails(broken((x) => (x.channels[0].assetType = 'photo')))).toContain("/channels/0/assetType must be equal to one of the allowed values (video, audio, data), got 'photo'");
    expect(parseFails(broken((x) => (x.channels[0].detect.anyPath = ['/dev/video0'])))).toContain('/channels/0/detect/anyPath/0 must match pattern');
    expect(parseFails(broken((x) => (x.channels[0].detect.anyPath = ['dev/../etc'])))).toContain('/channels/0/detect/anyPath/0');
  });

  it('bad semver and inverted range', () => {
    expect(parseFails(broken((x) => (x.minFirmware = 'v1.2.0')))).toContain("/minFirmware 'v1.2.0' is not strict semver");
    expect(parseFails(broken((x) => (x.maxFirmware = '1.0')))).toContain("/maxFirmware '1.0' is not strict semver");
    expect(parseFails(broken((x) => (x.maxFirmware = '1.0.0')))).toContain("/maxFirmware '1.0.0' must be greater than /minFirmware '1.0.0'");
  });

  it('duplicate channel keys', () => {
    expect(parseFails(broken((x) => x.channels.push({ ...x.channels[0] })))).toContain("/channels/1/key 'main' duplicates /channels/0/key");
  });

  it('invalid JSON', () => {
    expect(parseFails('{"id": "x",')).toMatch(/^firmware-profiles\/x\.json: invalid JSON: /);
  });

  it('in a directory: duplicate ids and equal minimums name the second file', () => {
    const dir = path.join(tmp.dir, 'dup');
    mkdirSync(dir);
    tmp.write('dup/a.json', JSON.stringify(valid));
    tmp.write('dup/b.json', JSON.stringify({ ...valid, minFirmware: '2.0.0' }));
    expect(configFailure(() => loadProfiles(dir)).message).toBe(`${path.join(dir, 'b.json')}: /id 'cam' is already used by ${path.join(dir, 'a.json')}`);
    tmp.write('dup/b.json', JSON.stringify({ ...valid, id: 'other', minFirmware: '1.0.0+build.2' }));
    expect(configFailure(() => loadProfiles(dir)).message).toContain("b.json: /minFirmware '1.0.0+build.2' equals that of");
    tmp.write('dup/b.json', JSON.stringify({ ...valid, id: 'other', minFirmware: '1.1.0' }));
    expect(loadProfiles(dir).map((x) => x.id)).toEqual(['cam', 'other']);
  });

  it('a directory with no profiles, or that does not exist', () => {
    const empty = path.join(tmp.dir, 'empty');
    mkdirSync(empty);
    tmp.write('empty/schema.json', '{}');
    expect(configFailure(() => loadProfiles(empty)).message).toBe(`no firmware profiles (*.json) in ${empty}`);
    expect(configFailure(() => loadProfiles(path.join(tmp.dir, 'none'))).message).toContain('(ENOENT)');
  });
});
