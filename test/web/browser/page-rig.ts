// The web page's browser suite's rig: Debian's chromium driven by
// playwright-core (its own browser download cannot work here: docs/testing.md),
// launched with the flags that work on a machine with no network but
// loopback, and a name pointed at loopback for the DNS-rebinding case; and
// `pump`, which moves the e2e rig's virtual clock while the page, in real
// time, gets to a state.
import { chromium, type Browser } from 'playwright-core';
import { tool } from '../../support/system-command.js';
import type { Rig } from '../../e2e/rig.js';

/** A name that resolves to the camera (127.0.0.1) but is not the camera's: a rebinding attacker's. */
export const REBOUND_NAME = 'rebound.example';

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: tool('chromium'),
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--host-resolver-rules=MAP ${REBOUND_NAME} 127.0.0.1`,
    ],
  });
}

/**
 * Moves agent time in steps of `stepMs` until `done()` (asked of the browser
 * or the daemon, in real time) holds; fails after `limitMs` of agent time
 * with the daemon's last lines. No real-time window is judged: between two
 * steps the page gets the time its answer to `done()` takes.
 */
export async function pump(r: Rig, what: string, done: () => Promise<boolean>, limitMs: number, stepMs = 250): Promise<void> {
  const start = r.now();
  for (;;) {
    if (await done()) return;
    if (r.now() - start >= limitMs) throw new Error(`${what}: not within ${limitMs} agent ms\n${r.tail()}`);
    await r.advance(stepMs);
  }
}
