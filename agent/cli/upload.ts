// `c2c-agent upload FILE... [--priority high|normal] [--json]`: queue files
// for upload, for integrators' scripts. With a daemon running, the files go
// through its local API (POST /v1/uploads: the daemon alone writes the
// outbox); without one, this command takes the daemon's locks (the runtime
// dir's and the state dir's) for a moment and puts them in the outbox
// itself, and the next `run` uploads them. Either way the same rules take a
// path (uploads/upload-paths.ts: the media dir and the upload roots only)
// and the same exit codes refuse one: a path outside them is 78 with the
// settings to change, a path that is not a regular file 64.
//
// Success is said only for what is on flash: the daemon's answer, or outbox
// records the disk took. The outbox holds records the disk refuses in memory
// (a daemon keeps retrying them); this process is about to exit, so for it
// that is a failure, one line and a non-zero exit (lib/fs-errors.ts:
// read-only 78, full 75). A file already queued (same path, inode, size and
// modification time) is not queued again: its item's id comes back with
// `queued: false`.
import { statSync } from 'node:fs';
import path from 'node:path';
import { loadSettings } from '../config/settings.js';
import { loadProfiles, selectProfile } from '../config/profiles.js';
import type { Settings } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { AgentError, EXIT, usageError } from '../lib/errors.js';
import { formatBytes, quote, quotePath } from '../lib/text.js';
import { readBootId } from '../outbox/outbox.js';
import type { OutboxFs, OutboxItem } from '../outbox/types.js';
import { fileTypeOf } from '../uploads/file-type.js';
import { UPLOAD_KIND, sameUpload, type UploadPayload } from '../uploads/upload-item.js';
import { resolveUploadPath, type UploadRoots } from '../uploads/upload-paths.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printJson, printLine } from './output.js';
import { DaemonApi, refusal } from './daemon-api.js';
import { openQueue, withQueueLocks } from './queue-locks.js';
import { queueDirOf } from '../outbox/location.js';

export const usage = 'upload FILE... [--priority high|normal] [--json]';
export const options = { json: { type: 'boolean' }, priority: { type: 'string' } } satisfies CommandOptions;
export const summary = 'Queues files for upload, whether or not the daemon runs (through its local API when it does; the next `run` uploads them otherwise).';
export const optionHelp = {
  json: { help: 'one JSON object on stdout instead of lines of text' },
  priority: { value: 'high|normal', help: 'high: send these before the rest of the queue (needs the daemon; `c2c-agent priority ID high` changes it later)', default: 'normal' },
};
export const allowPositionals = true;
export const help = [
  'Only files in the media dir or the upload roots (uploadRoots) are taken, with a daemon running or without: another path is exit 78, with the settings to change. A file already queued comes back with its id, not queued again.',
];

/** What became of one file: queued now (`queued`), or already in the queue as item `id`. */
export interface Queued {
  file: UploadPayload;
  queued: boolean;
  /** The outbox item. */
  id?: string;
}

/** What a refused path comes to: the advice for one outside the media dir and the upload roots. */
export const OUTSIDE_ADVICE = 'files are taken only from the media dir and the upload roots: move it into one, or add its folder to uploadRoots (--upload-roots DIR:DIR, C2C_UPLOAD_ROOTS, config key uploadRoots) or set mediaDir';

/**
 * A path refused by the rules on what is uploaded (upload-paths.ts), by its
 * verdict's status, the same with a daemon (its 403, 400, 404) and without:
 * outside the media dir and the upload roots, or led out of them, is a
 * setting to change (78, with the advice); not a regular file, or not
 * there, is the person's to fix (64).
 */
export function pathRefusal(status: number, reason: string): AgentError {
  // A reason that already names the settings (no media dir and no roots at all) is not told them twice.
  if (status === 403) return new AgentError('config', `upload: ${reason}${reason.includes('uploadRoots') ? '' : `; ${OUTSIDE_ADVICE}`}`, { status });
  return new AgentError('usage', `upload: ${reason}`, { status });
}

/** The roots files are taken from, as the daemon has them (units.ts): the media dir, the upload roots, and the profile's channel folders. */
export function rootsOf(settings: Settings): UploadRoots {
  let channelKeys: string[] = [];
  try {
    channelKeys = selectProfile(loadProfiles(settings.profilesDir, settings.sources.profilesDir), settings.firmwareVersion, settings.sources.firmwareVersion ?? 'default').channels.map((c) => c.key);
  } catch {
    // No profile for this firmware: no daemon runs with these settings either (`run` says why); a file is then queued for no channel.
  }
  return { roots: [...(settings.mediaDir === undefined ? [] : [settings.mediaDir]), ...(settings.uploadRoots ?? [])], channelKeys };
}

/** Each file checked as the daemon checks it (upload-paths.ts), before anything is queued: one refusal and nothing goes. */
async function payloadsOf(files: string[], roots: UploadRoots): Promise<UploadPayload[]> {
  const out: UploadPayload[] = [];
  for (const f of files) {
    const v = await resolveUploadPath(f, roots);
    if (!v.ok) throw pathRefusal(v.status, `${v.reason}; nothing was queued`);
    out.push(v.file);
  }
  return out;
}

/** The files once each: `upload f f` names one file. */
function distinct(files: UploadPayload[]): UploadPayload[] {
  return files.filter((f, i) => files.findIndex((g) => sameUpload(g, f)) === i);
}

const pendingSame = (items: readonly OutboxItem[], f: UploadPayload): OutboxItem | undefined =>
  items.find((i) => i.kind === UPLOAD_KIND && i.state === 'pending' && sameUpload(i.payload as UploadPayload, f));

export interface DirectOptions {
  clock: Clock;
  bootId: string;
  capBytes: number;
  /** Replaces node:fs (tests: a disk that refuses). */
  fs?: OutboxFs;
  /** The setting that gave the state dir, for messages. */
  source?: string;
}

/**
 * Puts the files in the outbox at `queueDir` (no daemon runs): a file
 * already pending comes back with its item, the others are put and flushed;
 * throws unless every new record is on flash.
 */
export async function queueDirectly(queueDir: string, files: UploadPayload[], o: DirectOptions): Promise<Queued[]> {
  const { outbox, assertWritten } = await openQueue(queueDir, { ...o, what: 'upload queue' });
  try {
    const out: Queued[] = [];
    const puts: Array<{ entry: Queued; put: Promise<OutboxItem> }> = [];
    for (const f of files) {
      const existing = pendingSame(outbox.pending(UPLOAD_KIND), f);
      if (existing !== undefined) {
        out.push({ file: f, queued: false, id: existing.id });
        continue;
      }
      // Put at once (each is pending in memory as soon as it is put), written together by the flush below.
      const entry: Queued = { file: f, queued: true };
      out.push(entry);
      puts.push({ entry, put: outbox.put(UPLOAD_KIND, f) });
    }
    await outbox.flush();
    const items = await Promise.all(puts.map((p) => p.put));
    puts.forEach((p, i) => (p.entry.id = items[i]!.id));
    assertWritten();
    const lost = items.find((i) => i.state !== 'pending');
    if (lost !== undefined) {
      throw new AgentError('disk', `cannot queue ${quotePath((lost.payload as UploadPayload).path)}: the queue is at its cap of ${formatBytes(o.capBytes)} (${lost.reason ?? 'dropped'}); let the daemon send what is queued, or raise queueMaxBytes`);
    }
    return out;
  } finally {
    await outbox.close().catch(() => undefined);
  }
}

/** What POST /v1/uploads answers for each path. */
interface DaemonQueued {
  path: string;
  id: string | null;
  duplicate: boolean;
}

function isDaemonQueued(v: unknown): v is { uploads: DaemonQueued[] } {
  const list = (v as { uploads?: unknown } | undefined)?.uploads;
  return Array.isArray(list) && list.every((u: Partial<DaemonQueued>) => typeof u?.path === 'string' && (typeof u.id === 'string' || u.id === null) && typeof u.duplicate === 'boolean');
}

/** What the person named, once each: resolved against the working directory (the daemon has its own). */
function namedPaths(positionals: string[]): string[] {
  return [...new Set(positionals.map((p) => path.resolve(p)))];
}

/** A file's facts for the output when this user can see them; the daemon checked and queued it either way. */
function factsOf(file: string): Pick<UploadPayload, 'size' | 'filetype'> | undefined {
  try {
    const st = statSync(file);
    return { size: st.size, filetype: fileTypeOf(path.basename(file)).filetype };
  } catch {
    return undefined;
  }
}

function priorityOf(value: unknown): 'high' | 'normal' | undefined {
  if (value === undefined) return undefined;
  if (value === 'high' || value === 'normal') return value;
  throw usageError(`upload: --priority ${quote(String(value))} must be high or normal; run c2c-agent upload --help`);
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    if (ctx.positionals.length === 0) throw usageError('upload: name at least one FILE; run c2c-agent upload --help');
    const priority = priorityOf(ctx.values.priority);
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const daemon = new DaemonApi(settings);
    const paths = namedPaths(ctx.positionals);
    const reply = await daemon.request('POST', '/v1/uploads', { paths, ...(priority !== undefined && { priority }) }, 60_000);
    if (reply !== undefined) {
      // A path the daemon's rules refuse is refused as this command refuses it without a daemon (pathRefusal): 78 outside the roots, not 77.
      if (reply.status === 403 || reply.status === 400 || reply.status === 404) {
        const r = refusal(reply, 'POST /v1/uploads');
        throw pathRefusal(reply.status, r.message);
      }
      if (reply.status !== 202 && reply.status !== 200) throw refusal(reply, 'POST /v1/uploads');
      if (!isDaemonQueued(reply.body)) throw new AgentError('protocol', `the daemon's answer to POST /v1/uploads is not what this agent sends (${daemon.socket})`);
      const queued = reply.body.uploads;
      if (ctx.json) {
        printJson({ ok: true, exitCode: EXIT.ok, via: 'daemon', files: queued.map((q) => ({ path: q.path, ...factsOf(q.path), queued: !q.duplicate, ...(q.id !== null && { id: q.id }) })) });
      } else {
        printLine(...queued.map((q) => `${q.path}: ${q.duplicate ? (q.id === null ? 'uploaded already' : `already queued (item ${q.id})`) : `handed to the running daemon (item ${q.id ?? '?'})`}`));
      }
      return EXIT.ok;
    }
    if (priority === 'high') throw usageError('upload: --priority high needs the daemon running (it orders its own queue); start it, or upload without --priority');
    const files = distinct(await payloadsOf(paths, rootsOf(settings)));
    const queueDir = queueDirOf(settings.stateDir);
    const done = await withQueueLocks(settings, daemon.socket, 'write its queue', async (clock) => {
      const opts: DirectOptions = { clock, bootId: await readBootId(), capBytes: settings.queueMaxBytes };
      opts.source = `<state-dir>/queue, the state dir from ${settings.sources.stateDir ?? 'default'}`;
      return queueDirectly(queueDir, files, opts);
    });
    if (ctx.json) {
      printJson({
        ok: true,
        exitCode: EXIT.ok,
        via: 'queue',
        files: done.map((q) => ({ path: q.file.path, size: q.file.size, filetype: q.file.filetype, queued: q.queued, ...(q.id !== undefined && { id: q.id }) })),
      });
    } else {
      printLine(...done.map((q) => `${q.file.path} (${formatBytes(q.file.size)}, ${q.file.filetype}): ${q.queued ? 'queued; the daemon uploads them when it runs' : `already queued (item ${q.id ?? '?'})`}`));
    }
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
