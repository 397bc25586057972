// How `pair` shows its progress: the pairing screen on a terminal (plain
// lines when stdout is not one), or JSON Lines with --json, one event per
// line, the last carrying ok and exitCode. The device code never reaches
// either: the events carry only what a person is meant to see.
import { codeFields, type PairingEvent } from '../auth/pairing.js';
import type { Clock } from '../lib/clock.js';
import { printJsonLine, stdout } from './output.js';
import { PairScreen } from './pair-screen.js';

/** The countdown redraws once a real second, whatever the time scale. */
const TICK_MS = 1_000;

export class PairReporter {
  private readonly screen: PairScreen | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private expiresAt = 0;

  constructor(
    private readonly json: boolean,
    private readonly clock: Clock,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    const color = stdout().isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
    this.screen = json ? undefined : new PairScreen(stdout(), { color });
  }

  private remaining(): number {
    return Math.max(0, Math.round((this.expiresAt - this.clock.now()) / 1000));
  }

  event(e: PairingEvent): void {
    if (e.type === 'code') {
      this.expiresAt = e.code.expiresAt;
      const c = e.code;
      if (this.json) {
        printJsonLine({ event: 'code', ...codeFields(c) });
        return;
      }
      this.screen?.showCode(
        { userCode: c.userCode, verificationUri: c.verificationUri, verificationUriComplete: c.verificationUriComplete, expiresInSeconds: c.expiresInSeconds, ...(c.name !== undefined && { name: c.name }) },
        this.remaining(),
      );
      this.screen?.status('waiting for approval…');
      if (this.ticker === undefined) {
        this.ticker = setInterval(() => this.screen?.tick(this.remaining()), TICK_MS);
        this.ticker.unref();
      }
      return;
    }
    if (this.json) {
      if (e.type === 'waiting') printJsonLine({ event: 'waiting', expires_in: e.remainingSeconds });
      else if (e.type === 'slow-down') printJsonLine({ event: 'slow_down', interval: e.intervalSeconds });
      else printJsonLine({ event: 'retrying', error: e.error.toJSON() });
      return;
    }
    if (e.type === 'waiting') this.screen?.status('waiting for approval…');
    else if (e.type === 'slow-down') this.screen?.status(`waiting for approval… (the service asked for a poll every ${e.intervalSeconds} s)`);
    else this.screen?.status(`waiting for approval… (${e.error.message}; retrying)`);
  }

  status(text: string): void {
    this.screen?.status(text);
  }

  /** The last word: the final JSON line, or the screen closed and the result printed plainly. */
  done(jsonEvent: { event: string; ok: boolean; exitCode: number; [k: string]: unknown }, lines: string[]): void {
    if (this.ticker !== undefined) clearInterval(this.ticker);
    this.ticker = undefined;
    if (this.json) printJsonLine(jsonEvent);
    else this.screen?.close(lines);
  }
}
