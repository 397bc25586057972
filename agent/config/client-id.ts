// The client id: unique per physical unit, sent on pairing, refresh, revoke
// and channel connect (lifecycle spec §1). An explicit setting wins;
// otherwise a random UUID is generated once and kept in the state dir
// (<state-dir>/agent-state.json, mode 0600). Never derived from a MAC address
// or anything personal. Written only on first use, so a healthy agent does
// not wear the SD card.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { configError } from '../lib/errors.js';
import type { Settings } from './types.js';

export const CLIENT_ID_STORE = 'agent-state';

export async function getClientId(settings: Pick<Settings, 'clientId' | 'stateDir' | 'sources'>): Promise<{ clientId: string; source: string }> {
  if (settings.clientId !== undefined) return { clientId: settings.clientId, source: settings.sources.clientId ?? 'settings' };
  const file = path.join(settings.stateDir, `${CLIENT_ID_STORE}.json`);
  // conf is loaded only here: most commands never need a generated id.
  const { default: Conf } = await import('conf');
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
    }
    return { clientId, source: file };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw configError(`cannot read or create the client id store ${file} (${code ?? (err as Error).message.replace(/\s+/g, ' ')})`, file);
  }
}
