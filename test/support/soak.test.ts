// The soak figures' one home: quick by default, full with C2C_SOAK=full, a
// figure's own variable above both, and a bad value refused in one line
// naming the variable and the value.
import { describe, expect, it } from '@jest/globals';
import { SOAK_FIGURES, soakFigure, soakSeed } from './soak.js';

describe('soak figures', () => {
  it('npm test runs the quick figures, test:soak the full ones, and each full one is larger or equal', () => {
    for (const [name, f] of Object.entries(SOAK_FIGURES) as Array<[keyof typeof SOAK_FIGURES, (typeof SOAK_FIGURES)[keyof typeof SOAK_FIGURES]]>) {
      expect(soakFigure(name, {})).toBe(f.quick);
      expect(soakFigure(name, { C2C_SOAK: 'quick' })).toBe(f.quick);
      expect(soakFigure(name, { C2C_SOAK: 'full' })).toBe(f.full);
      expect(f.full).toBeGreaterThanOrEqual(f.quick);
    }
    expect([SOAK_FIGURES.channelKills.full, SOAK_FIGURES.uploadKills.full, SOAK_FIGURES.channelOnlineKills.full, SOAK_FIGURES.refreshKills.full]).toEqual([200, 100, 90, 100]);
  });

  it("a figure's own variable wins over C2C_SOAK", () => {
    expect(soakFigure('uploadKills', { C2C_SOAK: 'full', C2C_SOAK_UPLOAD_KILLS: '7' })).toBe(7);
    expect(soakFigure('rotationHours', { C2C_SOAK_ROTATION_HOURS: '168' })).toBe(168);
  });

  it('a bad value is refused with the variable and the value', () => {
    expect(() => soakFigure('channelKills', { C2C_SOAK_CHANNEL_KILLS: 'lots' })).toThrow('C2C_SOAK_CHANNEL_KILLS="lots" in the environment is not a positive number');
    expect(() => soakFigure('channelKills', { C2C_SOAK_CHANNEL_KILLS: '0' })).toThrow('C2C_SOAK_CHANNEL_KILLS="0"');
    expect(() => soakFigure('channelKills', { C2C_SOAK_CHANNEL_KILLS: '' })).toThrow('C2C_SOAK_CHANNEL_KILLS=""');
    expect(() => soakFigure('channelKills', { C2C_SOAK: 'ful' })).toThrow('C2C_SOAK="ful" in the environment is neither "full" nor "quick"');
  });

  it('the seed is C2C_SOAK_SEED when set, else fresh on each run', () => {
    expect(soakSeed({ C2C_SOAK_SEED: '12345' })).toBe(12345);
    expect(() => soakSeed({ C2C_SOAK_SEED: '-1' })).toThrow('C2C_SOAK_SEED="-1" in the environment is not a non-negative integer');
    const fresh = new Set(Array.from({ length: 20 }, () => soakSeed({})));
    expect(fresh.size).toBeGreaterThan(1);
  });
});
