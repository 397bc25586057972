// The web page's PIN: made on the camera the first time the page starts,
// kept in `<state-dir>/web-pin` (0600, through lib/atomic-write.ts, in the
// 0700 state dir), read by `c2c-agent web-pin` and by GET /v1/web (the
// camera's own UI). Never logged, never in an error, never in a page.
//
// An administrator may write a PIN of their own into the file (6 to 64
// letters or digits) and restart the agent; removing the file makes the
// next start choose a new one.
import { randomInt } from 'node:crypto';
import path from 'node:path';
import { isMissing, READ_LIMITS, readBoundedText } from '../lib/bounded-read.js';
import { sweepOwnTemps, writeFileAtomic } from '../lib/atomic-write.js';
import { configError } from '../lib/errors.js';

export const WEB_PIN_FILE = 'web-pin';
/** Digits of a PIN the camera makes: 10^8 against a guesser held to a few tries per quarter hour (security.ts PinLimiter). */
export const PIN_DIGITS = 8;
const PIN_SHAPE = /^[0-9A-Za-z]{6,64}$/;

export const webPinFileOf = (stateDir: string): string => path.join(stateDir, WEB_PIN_FILE);

/** A new PIN: PIN_DIGITS digits from the system's CSPRNG. */
export function newPin(): string {
  let pin = '';
  for (let i = 0; i < PIN_DIGITS; i++) pin += String(randomInt(10));
  return pin;
}

/** The PIN in the file; undefined when there is none. A file that holds no PIN is a configuration error that names the file, never its content. */
export async function readWebPin(stateDir: string): Promise<string | undefined> {
  const file = webPinFileOf(stateDir);
  let text: string;
  try {
    text = await readBoundedText(file, { what: 'web page PIN file', maxBytes: READ_LIMITS.secret });
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  const pin = text.trim();
  if (!PIN_SHAPE.test(pin)) throw configError(`the web page PIN file ${file} holds no PIN (6 to 64 letters or digits on one line): write one there, or remove the file for a new one`, file);
  return pin;
}

/** The PIN, made and stored (0600, durably) when there is none yet. */
export async function ensureWebPin(stateDir: string): Promise<{ pin: string; made: boolean }> {
  sweepOwnTemps(stateDir, { prefix: WEB_PIN_FILE });
  const had = await readWebPin(stateDir);
  if (had !== undefined) return { pin: had, made: false };
  const pin = newPin();
  await writeFileAtomic(webPinFileOf(stateDir), `${pin}\n`, { mode: 0o600 });
  return { pin, made: true };
}
