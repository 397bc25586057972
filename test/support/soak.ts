// The soak tests' sizes: the one home of the environment variables that set
// them, of the quick figures `npm test` runs and of the full figures
// `npm run test:soak` runs (C2C_SOAK=full). docs/testing.md lists them.
//
// A soak test draws every moment it aims at (when to kill, which channel to
// plug, how big a clip is) from a seeded PRNG: a fresh seed on each run, so
// every run still kills at new moments, printed so a failing run's choices
// can be drawn again (C2C_SOAK_SEED=<seed>). Timing on a loaded machine is
// not replayed, only the choices.
import { seeded } from './seeded.js';

export interface SoakFigure {
  /** The environment variable that sets it. */
  readonly variable: string;
  /** What `npm test` runs. */
  readonly quick: number;
  /** What `npm run test:soak` runs. */
  readonly full: number;
  readonly what: string;
}

/** Every soak figure, by the test that uses it. */
export const SOAK_FIGURES = {
  channelKills: { variable: 'C2C_SOAK_CHANNEL_KILLS', quick: 20, full: 200, what: 'kill -9s while the service refuses connections, the daemon in-process (e2e/channels-crash.test.ts)' },
  channelOnlineKills: { variable: 'C2C_SOAK_CHANNEL_ONLINE_KILLS', quick: 12, full: 90, what: 'kill -9s aimed at outbox writes and channel calls, the daemon in-process (e2e/channels-crash.test.ts)' },
  uploadKills: { variable: 'C2C_SOAK_UPLOAD_KILLS', quick: 12, full: 100, what: 'kill -9s during uploads of 15 clips, the daemon in-process (e2e/uploads-crash.test.ts)' },
  refreshKills: { variable: 'C2C_SOAK_REFRESHES', quick: 15, full: 100, what: 'token refreshes through kill -9s, half aimed at them, the daemon in-process (e2e/refresh-crash.test.ts)' },
  rotationHours: { variable: 'C2C_SOAK_ROTATION_HOURS', quick: 6, full: 168, what: 'agent hours of token rotation, the daemon in-process (e2e/refresh.test.ts)' },
  rotationTokenHours: { variable: 'C2C_SOAK_TOKEN_HOURS', quick: 1, full: 8, what: 'the token lifetime in the rotation, hours (e2e/refresh.test.ts)' },
  propertyRuns: { variable: 'C2C_SOAK_PROPERTY_RUNS', quick: 10, full: 30, what: 'runs of 120 simulated hours of faults, restarts and clock jumps (heartbeat-property.test.ts)' },
  propertyControllerRuns: { variable: 'C2C_SOAK_PROPERTY_CONTROLLER_RUNS', quick: 4, full: 12, what: 'runs of 120 simulated hours with the controller driving (heartbeat-property.test.ts)' },
  powerCuts: { variable: 'C2C_SOAK_POWER_CUTS', quick: 12, full: 60, what: 'power cuts (a copy of the card image at a SIGKILL) across pairing, refreshes, queueing and uploads (powercut.test.ts)' },
} as const satisfies Record<string, SoakFigure>;

export type SoakFigureName = keyof typeof SOAK_FIGURES;

/** C2C_SOAK=full: every figure at its full value unless its own variable says otherwise. */
export const SOAK_FULL = process.env.C2C_SOAK === 'full';

function positiveNumber(variable: string, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n <= 0) throw new Error(`${variable}=${JSON.stringify(raw)} in the environment is not a positive number`);
  return n;
}

/** A soak figure: its own variable, else the full or quick value. */
export function soakFigure(name: SoakFigureName, env: NodeJS.ProcessEnv = process.env): number {
  const f: SoakFigure = SOAK_FIGURES[name];
  const raw = env[f.variable];
  if (raw !== undefined) return positiveNumber(f.variable, raw);
  if (env.C2C_SOAK !== undefined && env.C2C_SOAK !== 'full' && env.C2C_SOAK !== 'quick') throw new Error(`C2C_SOAK=${JSON.stringify(env.C2C_SOAK)} in the environment is neither "full" nor "quick"`);
  return env.C2C_SOAK === 'full' ? f.full : f.quick;
}

/** The seed of this run: C2C_SOAK_SEED, else a fresh one. */
export function soakSeed(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.C2C_SOAK_SEED;
  if (raw === undefined) return Math.floor(Math.random() * 2 ** 31);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`C2C_SOAK_SEED=${JSON.stringify(raw)} in the environment is not a non-negative integer`);
  return n;
}

export interface Soak {
  readonly seed: number;
  /** Uniform in [0, 1), from the seed. */
  readonly random: () => number;
  /** The figures this test uses, as run. */
  readonly figures: Record<string, number>;
}

/**
 * A soak test's figures, and its seed and PRNG when it draws moments at
 * random; prints one line saying what it runs and how to run it again or in
 * full.
 */
export function soak<N extends SoakFigureName>(test: string, names: readonly N[], o: { random: boolean } = { random: true }): Soak & { figure(name: N): number } {
  const seed = soakSeed();
  const figures = Object.fromEntries(names.map((n) => [n, soakFigure(n)])) as Record<N, number>;
  const shown = names.map((n) => `${SOAK_FIGURES[n].variable}=${figures[n]}${figures[n] === SOAK_FIGURES[n].full ? '' : ` (full ${SOAK_FIGURES[n].full})`}`).join(' ');
  console.log(`soak ${test}: ${shown}${o.random ? `; seed ${seed} (C2C_SOAK_SEED=${seed} draws the same moments)` : ''}`);
  return { seed, random: seeded(seed), figures, figure: (n: N) => figures[n] };
}
