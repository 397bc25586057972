// `c2c-agent comment FILE TEXT [--frame N] [--json]`: a comment on a clip
// (real-time logging, docs/real-time-logging.md, "Comments"), sent to the
// clip's asset once it exists: during the recording with real-time uploads,
// else once its upload starts. The clip is taken by the upload path rules
// (the media dir and the upload roots; its finished name while it is
// recorded as NAME.EXT.part). Through the running daemon's local API (POST
// /v1/comments); without one, put in the queue for its next start, as
// `upload` and `press` do.
import path from 'node:path';
import { loadSettings } from '../config/settings.js';
import { AgentError, EXIT, usageError } from '../lib/errors.js';
import { quotePath } from '../lib/text.js';
import { COMMENT_KIND, COMMENT_PRIORITY, CommentRefused, makeComment } from '../logging/comment.js';
import { readBootId } from '../outbox/outbox.js';
import { queueDirOf } from '../outbox/location.js';
import type { CommandContext, CommandOptions } from './command.js';
import { DaemonApi, refusal } from './daemon-api.js';
import { fail, printJson, printLine } from './output.js';
import { putInQueue, withQueueLocks } from './queue-locks.js';
import { OUTSIDE_ADVICE, rootsOf } from './upload.js';

export const usage = 'comment FILE TEXT [--frame N] [--json]';
export const options = { json: { type: 'boolean' }, frame: { type: 'string' } } satisfies CommandOptions;
export const allowPositionals = true;
export const summary = "Puts a comment on a clip, sent to the clip's asset once its upload has one: through the running daemon, or queued for its next start.";
export const optionHelp = {
  json: { help: 'one JSON object on stdout instead of lines of text' },
  frame: { value: 'N', help: 'the frame the comment is about, from 0', default: 'the whole clip' },
};
export const help = [
  'FILE is taken as `upload` takes it: in the media dir or an upload root (NAME.EXT names a clip still recorded as NAME.EXT.part). The comment waits until an upload of the clip has created its asset.',
  'Exit 64 for a file that is not there or not a regular file, an empty TEXT or a bad --frame; 78 for a file outside the media dir and the upload roots.',
];

/** A refusal by the path rules, as `upload` refuses the same path: outside the roots is a setting (78), the rest the person's (64). */
function refused(status: number, message: string): AgentError {
  if (status === 403) return new AgentError('config', `comment: ${message}${message.includes('uploadRoots') ? '' : `; ${OUTSIDE_ADVICE}`}`, { status });
  return new AgentError('usage', `comment: ${message}`, { status });
}

function frameOf(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string' && /^\d{1,9}$/.test(v)) return Number(v);
  throw usageError(`comment: --frame ${JSON.stringify(v)} must be a whole number of frames from 0; run c2c-agent comment --help`);
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    if (ctx.positionals.length !== 2) throw usageError('comment: name the FILE and the TEXT (quoted); run c2c-agent comment --help');
    const [file, text] = ctx.positionals as [string, string];
    const frame = frameOf(ctx.values.frame);
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const daemon = new DaemonApi(settings);
    // Resolved against this shell's working directory: the daemon has its own.
    const body = { path: path.resolve(file), text, ...(frame !== undefined && { frame }) };
    const reply = await daemon.request<{ comment?: { id?: unknown; state?: unknown } }>('POST', '/v1/comments', body, 60_000);
    let id: string;
    let state: string;
    let via: 'daemon' | 'queue';
    if (reply !== undefined) {
      if (reply.status === 403 || reply.status === 400 || reply.status === 404) throw refused(reply.status, refusal(reply, 'POST /v1/comments').message);
      if (reply.status !== 202) throw refusal(reply, 'POST /v1/comments');
      const c = reply.body?.comment;
      if (typeof c?.id !== 'string' || typeof c.state !== 'string') throw new AgentError('protocol', `the daemon's answer to the comment is not what this agent sends (${daemon.socket})`);
      [id, state, via] = [c.id, c.state, 'daemon'];
    } else {
      id = await withQueueLocks(settings, daemon.socket, 'write its queue', async (clock) => {
        const bootId = await readBootId();
        let payload;
        try {
          payload = await makeComment(body, rootsOf(settings), { mono: clock.now(), boot: bootId, wall: clock.wallNow() });
        } catch (err) {
          if (err instanceof CommentRefused) throw refused(err.status, err.message);
          throw err;
        }
        const source = `<state-dir>/queue, the state dir from ${settings.sources.stateDir ?? 'default'}`;
        return putInQueue(queueDirOf(settings.stateDir), COMMENT_KIND, payload, { clock, bootId, capBytes: settings.queueMaxBytes, priority: COMMENT_PRIORITY, source });
      });
      [state, via] = ['queued', 'queue'];
    }
    if (ctx.json) printJson({ ok: true, exitCode: EXIT.ok, via, comment: { id, path: body.path, state } });
    else {
      const when = state === 'held' ? 'held until its upload creates its asset' : via === 'daemon' ? 'the daemon sends it' : 'no daemon runs: the next `c2c-agent run` sends it once the clip has an asset';
      printLine(`comment on ${quotePath(body.path)}: queued (item ${id}); ${when}`);
    }
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
