// The daemon's preferences (GET/PATCH /v1/prefs): what the camera's own UI
// may change without a restart, kept in <state-dir>/prefs.json (0600,
// written atomically and only when a value changes: never on a start or a
// heartbeat). A change takes effect at once: the store publishes
// prefsChanged and the units that care read prefs() when they decide.
//
// Writes to flash are coalesced: at most one per PREFS_WRITE_EVERY_MS of
// agent time. A change after a quiet second is written before its answer
// (so a card that refuses it refuses the PATCH, and nothing changes); a
// change within the second after a write is in effect at once and reaches
// flash, with whatever came after it, at the end of that second. A client
// flipping a preference a thousand times writes the card about once a
// second, not a thousand times. stop() writes what is still pending.
//
// A missing file is the defaults; a file that is not ours (garbage, too
// large) is logged and the defaults used, and it is replaced only on the next
// change: a bad prefs file must not keep the daemon from running.
import path from 'node:path';
import { sweepOwnTemps, writeFileAtomic } from '../lib/atomic-write.js';
import { readBoundedTextSync } from '../lib/bounded-read.js';
import type { Clock, Timer } from '../lib/clock.js';
import { errnoOf } from '../lib/fs-errors.js';
import type { Logger } from '../lib/logger.js';
import type { EventBus } from '../core/event-bus.js';
import type { Prefs } from './events.js';
import type { DaemonUnit } from '../core/unit.js';
import type { StatusSections } from '../core/status-document.js';

export const PREFS_FILE = 'prefs.json';
export const DEFAULT_PREFS: Prefs = { autoUpload: true };
const MAX_BYTES = 16 * 1024;
/** Agent ms between two writes of prefs.json at most: the flash wear one client can cause. */
export const PREFS_WRITE_EVERY_MS = 1_000;

export interface PrefsStoreDeps {
  stateDir: string;
  bus: EventBus;
  /** Times the coalesced writes. */
  clock: Clock;
  logger?: Logger;
  /** How the file is written: writeFileAtomic, or a test's wrapper around it. */
  write?: typeof writeFileAtomic;
}

const fileText = (p: Prefs): string => `${JSON.stringify(p)}\n`;

/** The fields a PATCH may carry, each with its check: one home for what a preference is. */
const FIELDS: { [K in keyof Prefs]: (v: unknown) => v is Prefs[K] } = {
  autoUpload: (v): v is boolean => typeof v === 'boolean',
};

export class PrefsError extends Error {}

export class PrefsStore implements DaemonUnit {
  readonly name = 'prefs';
  private current: Prefs = { ...DEFAULT_PREFS };
  /** Applies and writes, one at a time in the order they came. */
  private chain: Promise<void> = Promise.resolve();
  /** What prefs.json holds (as this store wrote or read it); undefined when unknown or missing. */
  private onFlash: string | undefined;
  /** When the last write that succeeded started (agent ms). */
  private lastWriteAt = -Infinity;
  /** The write of a change made within a second of the last write, armed for the end of that second. */
  private flushTimer: Timer | undefined;
  /** A change is in effect that was not written yet (only then does a flush, or stop(), write). */
  private pending = false;
  private readonly write: typeof writeFileAtomic;

  constructor(private readonly d: PrefsStoreDeps) {
    this.write = d.write ?? writeFileAtomic;
  }

  get file(): string {
    return path.join(this.d.stateDir, PREFS_FILE);
  }

  prefs(): Prefs {
    return { ...this.current };
  }

  /** The status document's `prefs` section. */
  report(): Pick<Partial<StatusSections>, 'prefs'> {
    return { prefs: this.prefs() };
  }

  /**
   * Reads the file once, at start, before the units that read prefs() start
   * (a few bytes, read synchronously: the media watcher must not take a clip
   * in the moment before autoUpload off is known).
   */
  start(): void {
    this.load();
  }

  /** Waits for what is under way, then writes a change still pending (its timer not yet due). */
  async stop(): Promise<void> {
    this.flushTimer?.cancel();
    this.flushTimer = undefined;
    this.chain = this.chain.then(() => this.flush());
    await this.chain;
  }

  private load(): void {
    sweepOwnTemps(this.d.stateDir, { prefix: PREFS_FILE });
    let text: string;
    try {
      text = readBoundedTextSync(this.file, { what: 'preferences file', maxBytes: MAX_BYTES });
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') this.d.logger?.warn({ file: this.file, err: err instanceof Error ? err.message : String(err) }, 'cannot read the preferences; using the defaults until one is changed');
      return;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      raw = undefined;
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      this.d.logger?.warn({ file: this.file }, 'the preferences file is not a JSON object; using the defaults until one is changed');
      return;
    }
    const r = raw as Record<string, unknown>;
    for (const k of Object.keys(FIELDS) as Array<keyof Prefs>) if (FIELDS[k](r[k])) this.current = { ...this.current, [k]: r[k] };
    // Only a file exactly as this store writes it counts as holding the value: anything else is replaced at the next change.
    if (text === fileText(this.current)) this.onFlash = text;
  }

  /**
   * Applies a PATCH: every field known and of the right type, or a
   * PrefsError naming the bad one and nothing changed. Published (and
   * written, or its write armed) only when something changed.
   *
   * PATCHes apply one at a time, in the order they came: the new value and
   * the "nothing changed" check are taken from the value the previous PATCH
   * left, inside the same chain as its write and event (taken before that
   * write finished, a true sent just after a false was "no change" against
   * the old true, and the false then stayed). Each answer is the value just
   * after its own PATCH.
   */
  async update(patch: unknown): Promise<Prefs> {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new PrefsError('the body must be a JSON object, such as {"autoUpload": false}');
    const changes: Partial<Prefs> = {};
    for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
      if (!Object.hasOwn(FIELDS, k)) throw new PrefsError(`unknown preference ${JSON.stringify(k)}; known: ${Object.keys(FIELDS).join(', ')}`);
      const check = FIELDS[k as keyof Prefs];
      if (!check(v)) throw new PrefsError(`preference ${k} must be a boolean, not ${typeof v === 'object' && v !== null ? (Array.isArray(v) ? 'a list' : 'an object') : JSON.stringify(v)}`);
      (changes as Record<string, unknown>)[k] = v;
    }
    const run = this.chain.then(() => this.apply(changes));
    this.chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** One PATCH, in its turn in the chain: compare with the value now; write now, or later within the budget; take and publish it. */
  private async apply(changes: Partial<Prefs>): Promise<Prefs> {
    const next: Prefs = { ...this.current, ...changes };
    if ((Object.keys(next) as Array<keyof Prefs>).every((k) => next[k] === this.current[k])) return this.prefs();
    const due = this.flushTimer === undefined && this.d.clock.now() - this.lastWriteAt >= PREFS_WRITE_EVERY_MS;
    // A quiet second: written before the answer, so a card that refuses it refuses this PATCH and nothing changes.
    if (due && fileText(next) !== this.onFlash) await this.writeNow(next);
    this.current = next;
    this.d.logger?.info({ prefs: next }, 'preferences changed');
    this.d.bus.emit('prefsChanged', { prefs: this.prefs() });
    if (!due) {
      this.pending = true;
      this.flushSoon();
    }
    return this.prefs();
  }

  /** Arms the write of whatever is in effect for the end of the second that began with the last write. */
  private flushSoon(): void {
    if (this.flushTimer !== undefined) return;
    const wait = Math.max(0, this.lastWriteAt + PREFS_WRITE_EVERY_MS - this.d.clock.now());
    this.flushTimer = this.d.clock.setTimer(() => {
      this.flushTimer = undefined;
      this.chain = this.chain.then(() => this.flush());
    }, wait);
  }

  /** Writes the value in effect when flash holds another; a refusal is logged (the value stays in effect) and tried again at the next change or at stop. */
  private async flush(): Promise<void> {
    // Nothing changed since the last write: the defaults are never written just because the daemon stops.
    if (!this.pending || fileText(this.current) === this.onFlash) return;
    try {
      await this.writeNow(this.current);
    } catch (err) {
      this.d.logger?.warn({ file: this.file, err: err instanceof Error ? err.message : String(err) }, 'cannot write the preferences in effect; they are in effect until the daemon stops, and written at the next change or at stop');
    }
  }

  private async writeNow(p: Prefs): Promise<void> {
    const at = this.d.clock.now();
    const text = fileText(p);
    await this.write(this.file, text, { mode: 0o600 });
    this.onFlash = text;
    this.pending = false;
    this.lastWriteAt = at;
  }
}
