// `c2c-agent priority ID high|normal [--json]`: moves a waiting upload to
// the front of the queue (high) or back among the rest (normal), through the
// running daemon's local API (PATCH /v1/uploads/{id}). The order is kept on
// flash. IDs are those `c2c-agent queue` lists. Needs the daemon: without
// one, exit 69.
import { loadSettings } from '../config/settings.js';
import { EXIT, usageError } from '../lib/errors.js';
import { oneLine, quote } from '../lib/text.js';
import type { CommandContext, CommandOptions } from './command.js';
import { DaemonApi, notRunning, refusal } from './daemon-api.js';
import { fail, printJson, printLine } from './output.js';

export const usage = 'priority ID high|normal [--json]';
export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
export const allowPositionals = true;
export const summary = 'Sends a waiting upload (ID as `c2c-agent queue` lists it) before the others (high), or back in line with them (normal), through the running daemon.';
export const optionHelp = { json: { help: 'one JSON object on stdout instead of lines of text' } };
export const help = ['The order is kept on flash. Exit 64 for an ID the queue does not hold or an upload no longer waiting; 69 when no daemon runs.'];

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const [id, level, ...extra] = ctx.positionals;
    if (id === undefined || level === undefined || extra.length > 0) throw usageError('priority: name one upload ID and high or normal; run c2c-agent priority --help');
    if (level !== 'high' && level !== 'normal') throw usageError(`priority: ${quote(level)} must be high or normal; run c2c-agent priority --help`);
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const daemon = new DaemonApi(settings);
    const reply = await daemon.request<{ upload?: { name?: unknown; priority?: unknown } }>('PATCH', `/v1/uploads/${encodeURIComponent(id)}`, { priority: level }, 30_000);
    if (reply === undefined) throw notRunning(daemon.socket, settings.startAdvice);
    if (reply.status === 404) throw usageError(`priority: the queue holds no upload ${oneLine(id, 80)}; see c2c-agent queue`);
    if (reply.status === 409) throw usageError(`priority: ${refusal(reply, 'PATCH').message}`);
    if (reply.status !== 200) throw refusal(reply, `PATCH /v1/uploads/${id}`);
    const name = typeof reply.body?.upload?.name === 'string' ? reply.body.upload.name : undefined;
    if (ctx.json) printJson({ ok: true, exitCode: EXIT.ok, id, priority: level, ...(name !== undefined && { name }) });
    else printLine(`${id}${name !== undefined ? ` (${oneLine(name, 120)})` : ''}: priority ${level}`);
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
