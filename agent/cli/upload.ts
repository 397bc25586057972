// `c2c-agent upload FILE... [--json]`: queue files for upload from anywhere,
// for integrators' scripts. With a daemon running, the files are handed to
// it (a request file in the queue's incoming/ folder: the daemon alone writes
// the outbox); without one, this command takes the daemon's lock for a moment
// and puts them in the outbox itself, and the next `run` uploads them.
import { statSync } from 'node:fs';
import path from 'node:path';
import { loadSettings } from '../config/settings.js';
import { acquireRunLock } from '../daemon/runtime/run-lock.js';
import { ensureDir } from '../lib/ensure-dir.js';
import { SystemClock } from '../lib/clock.js';
import { EXIT, usageError } from '../lib/errors.js';
import { readBootId, Outbox } from '../outbox/outbox.js';
import { fileTypeOf } from '../uploads/file-type.js';
import { writeUploadRequest } from '../uploads/upload-request.js';
import { UPLOAD_KIND, type UploadPayload } from '../uploads/upload-item.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printJson, printLine } from './output.js';
import { queueDirOf } from '../outbox/location.js';

export const usage = 'upload FILE... [--json]';
export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
export const allowPositionals = true;

function payloadOf(file: string): UploadPayload {
  const full = path.resolve(file);
  let st;
  try {
    st = statSync(full);
  } catch (err) {
    throw usageError(`upload: cannot read ${full} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!st.isFile()) throw usageError(`upload: ${full} is not a regular file`);
  const name = path.basename(full);
  const { filetype, extension } = fileTypeOf(name);
  return { path: full, name, filetype, ...(extension !== undefined && { extension }), size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev };
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    if (ctx.positionals.length === 0) throw usageError('upload: name at least one FILE; run c2c-agent upload --help');
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const files = ctx.positionals.map(payloadOf);
    const queueDir = queueDirOf(settings.stateDir);
    // Without a runtime dir no daemon can be running here: make it, so the lock can say so.
    await ensureDir(settings.runtimeDir).catch(() => undefined);
    const lock = acquireRunLock(settings.runtimeDir);
    let via: 'daemon' | 'queue';
    if (lock.kind === 'held') {
      await writeUploadRequest(queueDir, files);
      via = 'daemon';
    } else {
      try {
        const outbox = new Outbox({ dir: queueDir, clock: new SystemClock(settings.timeScale), bootId: await readBootId(), capBytes: settings.queueMaxBytes });
        await outbox.open();
        for (const f of files) await outbox.put(UPLOAD_KIND, f);
        await outbox.close();
      } finally {
        lock.release();
      }
      via = 'queue';
    }
    const how = via === 'daemon' ? 'handed to the running daemon' : 'queued; the daemon uploads them when it runs';
    if (ctx.json) printJson({ ok: true, exitCode: EXIT.ok, via, files: files.map((f) => ({ path: f.path, size: f.size, filetype: f.filetype })) });
    else printLine(...files.map((f) => `${f.path} (${f.size} bytes, ${f.filetype}): ${how}`));
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
