// The agent's record of its channels at the service: profile key -> channel
// id, kept with conf in the state dir (<state-dir>/channels.json, mode 0600).
// Written only when the record changes, so a unit whose channels stay put
// never writes to its SD card. A corrupt file stops the agent with a
// configuration error rather than being reset: the record is what tells
// this unit's channels from strays.
//
// Unlike the client id, a lost record costs nothing lasting (the channels
// are found again by external_index), so the directory is not fsynced.
import path from 'node:path';
import type Conf from 'conf';
import { removeConfTemps } from '../lib/atomic-write.js';
import { checkRegularFileSync, READ_LIMITS } from '../lib/bounded-read.js';
import { AgentError, configError } from '../lib/errors.js';

export const CHANNEL_MAP_STORE = 'channels';

/** A temp file younger than this may be another process's write under way. */
const OTHERS_TEMP_AGE_MS = 60_000;

export type ChannelMap = Record<string, string>;

interface Stored {
  channels?: unknown;
}

export class ChannelMapStore {
  private conf: Conf<Stored> | undefined;

  constructor(
    private readonly stateDir: string,
    /** The daemon (the record's only writer while it holds the lock) sweeps every leftover temp; others only old ones. */
    private readonly opts: { soleWriter?: boolean; onSwept?: (names: string[]) => void } = {},
  ) {}

  get file(): string {
    return path.join(this.stateDir, `${CHANNEL_MAP_STORE}.json`);
  }

  /** The record; empty when none was ever written. */
  async load(): Promise<ChannelMap> {
    const store = await this.open();
    return this.guard('read', () => this.parse(store.get('channels')));
  }

  /** Writes `map` unless the file already holds it; true when it wrote. */
  async save(map: ChannelMap): Promise<boolean> {
    const store = await this.open();
    return this.guard('write', () => {
      const before = this.parse(store.get('channels'));
      if (sameMap(before, map)) return false;
      const sorted: ChannelMap = {};
      for (const key of Object.keys(map).sort()) sorted[key] = map[key]!;
      store.set('channels', sorted);
      return true;
    });
  }

  private async open(): Promise<Conf<Stored>> {
    if (this.conf) return this.conf;
    // conf is loaded only here: commands that never touch channels never pay for it.
    const { default: ConfClass } = await import('conf');
    // conf reads its file whole with a blocking read: a FIFO there would wedge
    // the daemon, a huge file fill memory. Look before it does.
    checkRegularFileSync(this.file, { what: 'channel record', maxBytes: READ_LIMITS.small });
    // This store owns its files: conf's temps a kill left behind go as it opens.
    const swept = removeConfTemps(this.stateDir, path.basename(this.file), this.opts.soleWriter === true ? 0 : OTHERS_TEMP_AGE_MS);
    if (swept.length > 0) this.opts.onSwept?.(swept);
    this.conf = this.guard('read', () => {
      return new ConfClass<Stored>({
        cwd: this.stateDir,
        configName: CHANNEL_MAP_STORE,
        configFileMode: 0o600,
        projectName: 'c2c-agent',
        clearInvalidConfig: false,
        // Keys are profile keys, never paths into the object.
        accessPropertiesByDotNotation: false,
      });
    });
    return this.conf;
  }

  private parse(value: unknown): ChannelMap {
    if (value === undefined) return {};
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw configError(`the channel record ${this.file} is corrupt ('channels' is not an object)`, this.file);
    }
    const out: ChannelMap = {};
    for (const [key, id] of Object.entries(value as Record<string, unknown>)) {
      if (typeof id !== 'string' || id === '') throw configError(`the channel record ${this.file} is corrupt (channel '${key}' has no id)`, this.file);
      out[key] = id;
    }
    return out;
  }

  private guard<T>(verb: 'read' | 'write', fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof AgentError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      const reason = code ?? (err as Error).message.replace(/\s+/g, ' ');
      throw configError(`cannot ${verb} the channel record ${this.file} (${reason}); fix or remove it`, this.file);
    }
  }
}

function sameMap(a: ChannelMap, b: ChannelMap): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
}
