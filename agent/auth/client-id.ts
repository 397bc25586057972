// The client id: unique per physical unit, sent on pairing, refresh, revoke
// and channel connect (docs/service-api.md, "Identity"). An explicit setting wins;
// otherwise a random UUID is generated once and kept in the state dir
// (<state-dir>/agent-state.json, mode 0600). Never derived from a MAC address
// or anything personal. Written only on first use, so a healthy agent does
// not wear the SD card.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { removeConfTemps, sweepOwnTemps, syncDirectory } from '../lib/atomic-write.js';
import { checkDirectorySync } from '../lib/bounded-read.js';
import { readJsonStore, writeJsonStore } from '../lib/json-store.js';
import { AgentError, configError } from '../lib/errors.js';
import { fsError, isFsError } from '../lib/fs-errors.js';
import { oneLine } from '../lib/text.js';
import type { Settings } from '../config/types.js';

export const CLIENT_ID_STORE = 'agent-state';

export interface ClientIdDeps {
  /** Injected by tests to see that the new id's directory entry is made durable. */
  syncDirectory?: (dir: string) => Promise<void>;
}

export async function getClientId(
  settings: Pick<Settings, 'clientId' | 'stateDir' | 'sources'>,
  deps: ClientIdDeps = {},
): Promise<{ clientId: string; source: string }> {
  if (settings.clientId !== undefined) return { clientId: settings.clientId, source: settings.sources.clientId ?? 'settings' };
  const file = path.join(settings.stateDir, `${CLIENT_ID_STORE}.json`);
  const sync = deps.syncDirectory ?? syncDirectory;
  const source = settings.sources.stateDir;
  const dirExisted = checkDirectorySync(settings.stateDir, { what: 'state dir', source });
  // This store owns its files: the temps a kill left behind (conf's, from an older agent, and its
  // own) go as it opens. Only old ones: another command (pair, upload, the daemon) may be creating the id now.
  removeConfTemps(settings.stateDir, path.basename(file), 60_000);
  sweepOwnTemps(settings.stateDir, { prefix: path.basename(file), olderThanMs: 60_000 });
  try {
    // A FIFO or a huge file there is refused before it is read (lib/json-store.ts).
    const stored = readJsonStore(file, 'client id store', source) ?? {};
    const kept = stored.clientId;
    if (typeof kept === 'string' && kept !== '') return { clientId: kept, source: file };
    const clientId = randomUUID();
    {
      await writeJsonStore(file, { ...stored, clientId });
      // The new entry made durable in its directory, and (best effort: the parent, e.g. /var/lib,
      // may not be readable by the agent's user) the state dir's own in its parent when it was made
      // here: a power cut at first boot must not give the unit a new identity. Once, on creation only.
      await sync(settings.stateDir);
      if (!dirExisted) await sync(path.dirname(settings.stateDir)).catch(() => undefined);
    }
    return { clientId, source: file };
  } catch (err) {
    if (err instanceof AgentError) throw err;
    if (isFsError(err)) throw fsError(err, 'read or create the client id store', file, source);
    // A file that is not a JSON object carries no code.
    throw configError(`cannot read or create the client id store ${file} (${oneLine((err as Error).message)})`, file);
  }
}
