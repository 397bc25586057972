// Before the service is asked for a pairing code: once it has issued tokens,
// a state dir that is missing, not a directory or not writable would lose the
// approved pairing. Shared by `c2c-agent pair` and the daemon's pairing.
import { randomBytes } from 'node:crypto';
import * as fs from '../lib/fs-async.js';
import path from 'node:path';
import type { Settings } from '../config/types.js';
import { checkDirectorySync, checkRegularFileSync, READ_LIMITS } from '../lib/bounded-read.js';
import { ensureDir } from '../lib/ensure-dir.js';
import { fsError } from '../lib/fs-errors.js';

/** About what writing the credentials takes (temp file, rename): a full disk fails here, not after the grant. */
const PROBE_BYTES = 4096;

/** Writes, flushes and removes a small file in `dir`: what saving the credentials will do there. Throws the raw fs error. */
export async function writeProbe(dir: string): Promise<void> {
  const file = path.join(dir, `.c2c-agent-write-probe.${process.pid}.${randomBytes(4).toString('hex')}`);
  const handle = await fs.open(file, 'wx', 0o600);
  try {
    await handle.writeFile(Buffer.alloc(PROBE_BYTES));
    await handle.sync();
  } finally {
    await handle.close().catch(() => undefined);
    await fs.rm(file, { force: true });
  }
}

/**
 * The state dir (and the token file's directory, when elsewhere) is made if
 * missing (0700) and must take a write; the token file, if there, must be a
 * regular file (rename cannot replace a directory).
 */
export async function prepareCredentialsDirs(settings: Pick<Settings, 'stateDir' | 'tokenFile' | 'sources'>, probe: (dir: string) => Promise<void> = writeProbe): Promise<void> {
  const dirs = new Map([[settings.stateDir, { what: 'state dir', source: settings.sources.stateDir }]]);
  const tokenDir = path.dirname(settings.tokenFile);
  if (!dirs.has(tokenDir)) dirs.set(tokenDir, { what: 'directory of the credentials file', source: settings.sources.tokenFile });
  for (const [dir, spec] of dirs) {
    if (!checkDirectorySync(dir, spec)) {
      await ensureDir(dir, 0o700).catch((err: unknown) => {
        throw fsError(err, `create the ${spec.what}`, dir, spec.source);
      });
    }
    await probe(dir).catch((err: unknown) => {
      throw fsError(err, `write in the ${spec.what} (where the credentials will be stored)`, dir, spec.source);
    });
  }
  checkRegularFileSync(settings.tokenFile, { what: 'credentials file', maxBytes: READ_LIMITS.credentials, source: settings.sources.tokenFile });
}
