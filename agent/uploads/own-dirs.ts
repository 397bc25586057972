// The agent's own dirs, which no upload root may lead into (upload-paths.ts).
import path from 'node:path';
import { UNIT_CREDENTIALS_DIR } from '../auth/credentials-systemd.js';
import type { Settings } from '../config/types.js';

/**
 * The agent's own dirs, whose files are never uploaded whatever a root resolves to (a root swapped
 * for a link to the state dir would hold credentials.json): the state, runtime and credentials
 * dirs and those of the config, token and client secret files. One that holds a configured root
 * as written (a media dir inside the state dir) is left out, or that root could never upload.
 */
export function ownDirs(settings: Pick<Settings, 'stateDir' | 'runtimeDir' | 'credentialsDir' | 'configFile' | 'tokenFile' | 'clientSecretFile'>, roots: readonly string[]): string[] {
  const dirs = [settings.stateDir, settings.runtimeDir, settings.credentialsDir ?? UNIT_CREDENTIALS_DIR, path.dirname(settings.configFile), path.dirname(settings.tokenFile), ...(settings.clientSecretFile === undefined ? [] : [path.dirname(settings.clientSecretFile)])].map((d) => path.resolve(d));
  const holds = (dir: string, root: string): boolean => {
    const rel = path.relative(dir, path.resolve(root));
    return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
  };
  return [...new Set(dirs)].filter((d) => !roots.some((r) => holds(d, r)));
}
