// The power-cut suite's size, read as test/support/soak.ts reads every soak
// figure: its own variable (C2C_SOAK_POWER_CUTS) wins, else C2C_SOAK=full
// gives the full count, else the quick one `npm test` runs; the moments come
// from a seeded PRNG (C2C_SOAK_SEED replays them), and one line says so.
// Kept here until the figure joins SOAK_FIGURES in soak.ts (and the suite the
// pattern of `npm run test:soak`).
import { soakSeed } from '../support/soak.js';
import { seeded } from '../support/seeded.js';

export const POWER_CUTS = { variable: 'C2C_SOAK_POWER_CUTS', quick: 12, full: 60, what: 'power cuts (a copy of the card image at a SIGKILL) across pairing, refreshes, queueing and uploads (powercut.test.ts)' } as const;

export function powerCutFigure(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[POWER_CUTS.variable];
  if (raw !== undefined) {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isInteger(n) || n <= 0) throw new Error(`${POWER_CUTS.variable}=${JSON.stringify(raw)} in the environment is not a positive whole number`);
    return n;
  }
  if (env.C2C_SOAK !== undefined && env.C2C_SOAK !== 'full' && env.C2C_SOAK !== 'quick') throw new Error(`C2C_SOAK=${JSON.stringify(env.C2C_SOAK)} in the environment is neither "full" nor "quick"`);
  return env.C2C_SOAK === 'full' ? POWER_CUTS.full : POWER_CUTS.quick;
}

export function powerCutSoak(): { cuts: number; seed: number; random: () => number } {
  const cuts = powerCutFigure();
  const seed = soakSeed();
  console.log(`soak power cuts: ${POWER_CUTS.variable}=${cuts}${cuts === POWER_CUTS.full ? '' : ` (full ${POWER_CUTS.full})`}; seed ${seed} (C2C_SOAK_SEED=${seed} draws the same moments)`);
  return { cuts, seed, random: seeded(seed) };
}
