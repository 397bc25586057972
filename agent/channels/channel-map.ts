// The agent's record of its channels at the service: profile key -> channel
// id, kept in the state dir (<state-dir>/channels.json, mode 0600; lib/json-store.ts).
// Written only when the record changes, so a unit whose channels stay put
// never writes to its SD card. A corrupt file stops the agent with a
// configuration error rather than being reset: the record is what tells
// this unit's channels from strays.
//
// Unlike the client id, a lost record costs nothing lasting (the channels
// are found again by external_index), so the directory is not fsynced.
import path from 'node:path';
import { removeConfTemps, sweepOwnTemps } from '../lib/atomic-write.js';
import { readJsonStore, writeJsonStore } from '../lib/json-store.js';
import { AgentError, configError } from '../lib/errors.js';

export const CHANNEL_MAP_STORE = 'channels';

/** A temp file younger than this may be another process's write under way. */
const OTHERS_TEMP_AGE_MS = 60_000;

export type ChannelMap = Record<string, string>;

interface Stored {
  channels?: unknown;
}

export class ChannelMapStore {
  private swept = false;

  constructor(
    private readonly stateDir: string,
    /** The daemon (the record's only writer while it holds the lock) sweeps every leftover temp; others only old ones. */
    private readonly opts: { soleWriter?: boolean; onSwept?: (names: string[]) => void } = {},
  ) {}

  get file(): string {
    return path.join(this.stateDir, `${CHANNEL_MAP_STORE}.json`);
  }

  /** The record; empty when none was ever written. Read from the file each time (another command may have written it). */
  async load(): Promise<ChannelMap> {
    return this.parse(this.read().channels);
  }

  /** Writes `map` unless the file already holds it; true when it wrote. */
  async save(map: ChannelMap): Promise<boolean> {
    const stored = this.read();
    const before = this.parse(stored.channels);
    if (sameMap(before, map)) return false;
    const sorted: ChannelMap = {};
    for (const key of Object.keys(map).sort()) sorted[key] = map[key]!;
    try {
      await writeJsonStore(this.file, { ...stored, channels: sorted });
    } catch (err) {
      throw this.refusal('write', err);
    }
    return true;
  }

  private read(): Stored {
    this.sweep();
    try {
      return readJsonStore(this.file, 'channel record') ?? {};
    } catch (err) {
      throw this.refusal('read', err);
    }
  }

  /** This store owns its files: the temps a kill left behind (conf's, an older agent's, and its own) go as it first opens. */
  private sweep(): void {
    if (this.swept) return;
    this.swept = true;
    const olderThanMs = this.opts.soleWriter === true ? 0 : OTHERS_TEMP_AGE_MS;
    const swept = [...removeConfTemps(this.stateDir, path.basename(this.file), olderThanMs), ...sweepOwnTemps(this.stateDir, { prefix: path.basename(this.file), ...(olderThanMs > 0 && { olderThanMs }) })];
    if (swept.length > 0) this.opts.onSwept?.(swept);
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

  private refusal(verb: 'read' | 'write', err: unknown): unknown {
    if (err instanceof AgentError) return err;
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code ?? (err as Error).message.replace(/\s+/g, ' ');
    return configError(`cannot ${verb} the channel record ${this.file} (${reason}); fix or remove it`, this.file);
  }
}

function sameMap(a: ChannelMap, b: ChannelMap): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
}
