// `c2c-agent cancel ID... [--json]` or `c2c-agent cancel --all [--json]`:
// stops uploads through the running daemon's local API (DELETE
// /v1/uploads/{id}, DELETE /v1/uploads). An upload in flight stops within
// seconds; a cancelled file is never retried and the media watcher does not
// queue it again. IDs are those `c2c-agent queue` lists. Needs the daemon:
// without one, exit 69.
import { loadSettings } from '../config/settings.js';
import { AgentError, EXIT, usageError } from '../lib/errors.js';
import { oneLine } from '../lib/text.js';
import { COMPLETED_DESPITE_CANCEL } from '../uploads/upload-item.js';
import type { CommandContext, CommandOptions } from './command.js';
import { DaemonApi, notRunning, refusal } from './daemon-api.js';
import { fail, printJson, printLine } from './output.js';

export const usage = 'cancel ID... | --all [--json]';
export const options = { json: { type: 'boolean' }, all: { type: 'boolean' } } satisfies CommandOptions;
export const allowPositionals = true;
export const summary = 'Cancels uploads through the running daemon: those named by ID (as `c2c-agent queue` lists them), or every one not yet done with --all.';
export const optionHelp = {
  json: { help: 'one JSON object on stdout instead of lines of text' },
  all: { help: 'cancel every upload not yet done' },
};
export const help = [
  'An upload in flight stops within seconds; a cancelled file is never retried, nor queued again by the media watcher.',
  'Exit 64 for an ID the queue does not hold or an upload already done; 69 when no daemon runs.',
];

interface Row {
  id: string;
  name?: string;
  state?: string;
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const all = ctx.values.all === true;
    if (all === (ctx.positionals.length > 0)) throw usageError('cancel: name the upload IDs to cancel, or --all (not both); run c2c-agent cancel --help');
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const daemon = new DaemonApi(settings);
    const cancelled: Row[] = [];
    if (all) {
      const reply = await daemon.request<{ cancelled?: unknown }>('DELETE', '/v1/uploads', undefined, 30_000);
      if (reply === undefined) throw notRunning(daemon.socket, settings.startAdvice);
      if (reply.status !== 200) throw refusal(reply, 'DELETE /v1/uploads');
      const ids = Array.isArray(reply.body?.cancelled) ? reply.body.cancelled.filter((i): i is string => typeof i === 'string') : [];
      cancelled.push(...ids.map((id) => ({ id })));
    } else {
      for (const id of new Set(ctx.positionals)) {
        const reply = await daemon.request<{ upload?: Row }>('DELETE', `/v1/uploads/${encodeURIComponent(id)}`, undefined, 30_000);
        if (reply === undefined) throw notRunning(daemon.socket, settings.startAdvice);
        // An upload already done cannot be cancelled: the person's request does not fit the queue (64), like an unknown id.
        if (reply.status === 409) throw new AgentError('usage', `${refusal(reply, 'DELETE').message}; nothing to cancel`);
        if (reply.status === 404) throw usageError(`cancel: the queue holds no upload ${oneLine(id, 80)}; see c2c-agent queue${cancelled.length > 0 ? ` (cancelled before it: ${cancelled.map((c) => c.id).join(', ')})` : ''}`);
        // 202: its last part is on its way, and storage's answer settles it (docs/local-api.md).
        if (reply.status !== 200 && reply.status !== 202) throw refusal(reply, `DELETE /v1/uploads/${id}`);
        const u = reply.body?.upload;
        cancelled.push({ id, ...(typeof u?.name === 'string' && { name: u.name }), ...(typeof u?.state === 'string' && { state: u.state }) });
      }
    }
    if (ctx.json) {
      printJson({ ok: true, exitCode: EXIT.ok, cancelled });
    } else if (cancelled.length === 0) {
      printLine('nothing to cancel: no upload is waiting or running');
    } else {
      // Said as it came out: a cancel too late for the last part did not take.
      const line = (c: Row): string => {
        const what = `${c.id}${c.name !== undefined ? ` (${oneLine(c.name, 120)})` : ''}`;
        if (c.state === COMPLETED_DESPITE_CANCEL) return `not cancelled: ${what}: its last part was on its way and the service completed it (${COMPLETED_DESPITE_CANCEL})`;
        if (c.state === 'uploading') return `cancel asked for ${what} while its last part is on its way: cancelled if storage refuses that part, ${COMPLETED_DESPITE_CANCEL} if it takes it (see c2c-agent queue)`;
        return `cancelled ${what}`;
      };
      printLine(...cancelled.map(line));
    }
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
