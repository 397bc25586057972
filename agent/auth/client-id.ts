// The client id: unique per physical unit, sent on pairing, refresh, revoke
// and channel connect (docs/service-api.md, "Identity"). An explicit setting wins;
// otherwise a random UUID is generated once and kept in the state dir
// (<state-dir>/agent-state.json, mode 0600). Never derived from a MAC address
// or anything personal. Written only on first use, so a healthy agent does
// not wear the SD card.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { removeConfTemps, syncDirectory } from '../lib/atomic-write.js';
import { checkDirectorySync, checkRegularFileSync, READ_LIMITS } from '../lib/bounded-read.js';
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
  // conf is loaded only here: most commands never need a generated id.
  const { default: Conf } = await import('conf');
  const sync = deps.syncDirectory ?? syncDirectory;
  const source = settings.sources.stateDir;
  // conf reads its file whole with readFileSync: a FIFO there would block for
  // good, a huge file fill memory. Look before it does.
  const dirExisted = checkDirectorySync(settings.stateDir, { what: 'state dir', source });
  checkRegularFileSync(file, { what: 'client id store', maxBytes: READ_LIMITS.small, source });
  // This store owns its files: conf's temps a kill left behind go as it opens. Only
  // old ones: another command (pair, upload, the daemon) may be creating the id now.
  removeConfTemps(settings.stateDir, path.basename(file), 60_000);
  try {
    const store = new Conf<{ clientId?: string }>({
      cwd: settings.stateDir,
      configName: CLIENT_ID_STORE,
      configFileMode: 0o600,
      projectName: 'c2c-agent',
      // A corrupt store must stop the agent, not silently give the unit a new identity.
      clearInvalidConfig: false,
    });
    let clientId = store.get('clientId');
    if (typeof clientId !== 'string' || clientId === '') {
      clientId = randomUUID();
      store.set('clientId', clientId);
      // conf (via atomically) fsyncs the file but not its directory: without
      // this a power cut at first boot could lose the entry, and the unit
      // would come back with a new identity. Once, on creation only.
      await sync(settings.stateDir);
      // Best effort: the parent (e.g. /var/lib) may not be readable by the agent's user.
      if (!dirExisted) await sync(path.dirname(settings.stateDir)).catch(() => undefined);
    }
    return { clientId, source: file };
  } catch (err) {
    if (err instanceof AgentError) throw err;
    if (isFsError(err)) throw fsError(err, 'read or create the client id store', file, source);
    // conf's own refusals (a file that is not JSON) carry no code.
    throw configError(`cannot read or create the client id store ${file} (${oneLine((err as Error).message)})`, file);
  }
}
