// The daemon's preferences (GET/PATCH /v1/prefs): what the camera's own UI
// may change without a restart, kept in <state-dir>/prefs.json (0600,
// written atomically and only when a value changes: never on a start or a
// heartbeat). A change takes effect at once: the store publishes
// prefsChanged and the units that care read prefs() when they decide.
//
// A missing file is the defaults; a file that is not ours (garbage, too
// large) is logged and the defaults used, and it is replaced only on the next
// change: a bad prefs file must not keep the daemon from running.
import path from 'node:path';
import { sweepOwnTemps, writeFileAtomic } from '../lib/atomic-write.js';
import { readBoundedTextSync } from '../lib/bounded-read.js';
import { errnoOf } from '../lib/fs-errors.js';
import type { Logger } from '../lib/logger.js';
import type { EventBus, Prefs } from '../core/event-bus.js';
import type { DaemonUnit } from '../core/unit.js';
import type { StatusSections } from '../core/status-document.js';

export const PREFS_FILE = 'prefs.json';
export const DEFAULT_PREFS: Prefs = { autoUpload: true };
const MAX_BYTES = 16 * 1024;

/** The fields a PATCH may carry, each with its check: one home for what a preference is. */
const FIELDS: { [K in keyof Prefs]: (v: unknown) => v is Prefs[K] } = {
  autoUpload: (v): v is boolean => typeof v === 'boolean',
};

export class PrefsError extends Error {}

export class PrefsStore implements DaemonUnit {
  readonly name = 'prefs';
  private current: Prefs = { ...DEFAULT_PREFS };
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly stateDir: string,
    private readonly bus: EventBus,
    private readonly logger?: Logger,
    /** How the file is written: writeFileAtomic, or a test's wrapper around it. */
    private readonly write: typeof writeFileAtomic = writeFileAtomic,
  ) {}

  get file(): string {
    return path.join(this.stateDir, PREFS_FILE);
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

  async stop(): Promise<void> {
    await this.writing;
  }

  private load(): void {
    sweepOwnTemps(this.stateDir, { prefix: PREFS_FILE });
    let text: string;
    try {
      text = readBoundedTextSync(this.file, { what: 'preferences file', maxBytes: MAX_BYTES });
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') this.logger?.warn({ file: this.file, err: err instanceof Error ? err.message : String(err) }, 'cannot read the preferences; using the defaults until one is changed');
      return;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      raw = undefined;
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      this.logger?.warn({ file: this.file }, 'the preferences file is not a JSON object; using the defaults until one is changed');
      return;
    }
    const r = raw as Record<string, unknown>;
    for (const k of Object.keys(FIELDS) as Array<keyof Prefs>) if (FIELDS[k](r[k])) this.current = { ...this.current, [k]: r[k] };
  }

  /**
   * Applies a PATCH: every field known and of the right type, or a
   * PrefsError naming the bad one and nothing changed. Written and
   * published only when something changed.
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
      if (!check(v)) throw new PrefsError(`preference ${k} must be a boolean, not ${JSON.stringify(v)}`);
      (changes as Record<string, unknown>)[k] = v;
    }
    const run = this.writing.then(() => this.apply(changes));
    this.writing = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** One PATCH, in its turn in the chain: compare with the value now, write, then take and publish it. */
  private async apply(changes: Partial<Prefs>): Promise<Prefs> {
    const next: Prefs = { ...this.current, ...changes };
    if ((Object.keys(next) as Array<keyof Prefs>).every((k) => next[k] === this.current[k])) return this.prefs();
    await this.write(this.file, `${JSON.stringify(next)}\n`, { mode: 0o600 });
    this.current = next;
    this.logger?.info({ prefs: next }, 'preferences changed');
    this.bus.emit('prefsChanged', { prefs: this.prefs() });
    return this.prefs();
  }
}
