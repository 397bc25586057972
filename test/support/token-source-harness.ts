// A CredentialsTokenSource on a FakeClock with a FakeOAuth, a temp dir and a
// readable logger: shared by the token-source suites.
import { readFileSync } from 'node:fs';
import type { ClientCredentials } from '../../agent/api/oauth.js';
import type { Settings } from '../../agent/config/types.js';
import { CredentialsTokenSource } from '../../agent/auth/token-source.js';
import { EventBus } from '../../agent/core/event-bus.js';
import { FakeClock } from './fake-clock.js';
import { CLIENT, FakeOAuth, memoryLogger, recordingClock, settingsIn, writeCredentials } from './auth-fixtures.js';

export const HOUR = 3_600_000;
export const LIFETIME_S = 8 * 3600;
export const LIFETIME_MS = LIFETIME_S * 1000;

export interface SourceOptions {
  dir: string;
  random?: () => number;
  /** Wall clock of the unit (default 2026-01-01, the time the file was written at). */
  wallStart?: number;
  /** How much of the token's life is gone per the file, ms (default 0). */
  ageMs?: number;
  settings?: Partial<Settings>;
  /** null: no `client` dep at all. */
  client?: (() => Promise<ClientCredentials | undefined>) | null;
  /** Write no file (the test writes its own). */
  noFile?: boolean;
}

export const FILE_WALL = Date.UTC(2026, 0, 1);

export function makeSource(o: SourceOptions) {
  const fake = new FakeClock(1_000_000, o.wallStart ?? FILE_WALL);
  const { clock, delays } = recordingClock(fake);
  const settings = settingsIn(o.dir, o.settings);
  if (!o.noFile) writeCredentials(settings.tokenFile, { access: 'access-old-000001', refresh: 'refresh-old-000001', lifetimeS: LIFETIME_S, wallNow: FILE_WALL, ageMs: o.ageMs ?? 0 });
  const oauth = new FakeOAuth();
  const { logger, lines } = memoryLogger();
  const rejected: string[] = [];
  const bus = new EventBus();
  bus.on('tokensRejected', rejected, ({ reason }) => void rejected.push(reason));
  const source = new CredentialsTokenSource(settings, {
    clock,
    random: o.random ?? (() => 0.5),
    logger,
    oauth,
    ...(o.client !== null && { client: o.client ?? (async () => CLIENT) }),
    bus,
  });
  const fileJson = (): Record<string, unknown> => JSON.parse(readFileSync(settings.tokenFile, 'utf8')) as Record<string, unknown>;
  /** Agent ms until the armed timer, or undefined when none is armed. */
  const armedIn = (): number | undefined => {
    const at = fake.nextAt();
    return at === undefined ? undefined : at - fake.now();
  };
  return { clock: fake, delays, settings, oauth, logger, lines, rejected, source, fileJson, armedIn };
}
