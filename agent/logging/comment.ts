// A comment on a clip as an outbox item (docs/real-time-logging.md,
// "Comments"): the clip by path, taken by the same rules as a file queued for
// upload (uploads/upload-paths.ts: inside the media dir or an upload root,
// one name, no link out, none of the agent's own files), the text, and
// optionally the frame. It waits for the clip's asset: the asset id an upload
// of the clip records in its outbox item (upload-item.ts's and
// realtime-item.ts's progress, `assetId`), which a real-time upload has from
// the first seconds of the recording, a whole-file upload once it starts.
import path from 'node:path';
import type { OutboxItem } from '../outbox/types.js';
import { resolveUploadPath, type UploadRoots } from '../uploads/upload-paths.js';
import type { Moment } from './press.js';

export { COMMENT_KIND } from './host.js';
export const COMMENT_PRIORITY = 20;
/** The longest comment taken (the service states none; a screenful of text). */
export const MAX_COMMENT_CHARS = 5_000;
/** The upload kinds whose items carry an asset id (uploads/upload-item.ts, uploads/realtime-item.ts). */
const UPLOAD_KINDS = new Set(['upload', 'realtime-upload']);
/** A recording's working name (uploads/media-watcher.ts): NAME.EXT.part until it is renamed NAME.EXT. */
const PART = '.part';

export interface CommentPayload {
  /** The clip as it was when the comment was made (NAME.EXT.part while it recorded). */
  path: string;
  /** Its path once finished (the same unless it was a .part). */
  finalPath: string;
  name: string;
  /** The file's identity: a rename keeps it, so a recording's comment finds its finished upload. */
  dev: number;
  ino: number;
  text: string;
  /** Frames from the start of the clip; absent: a comment on the whole clip. */
  frame?: number;
  at: Moment;
}

export class CommentRefused extends Error {
  constructor(
    readonly status: 400 | 403 | 404,
    message: string,
  ) {
    super(message);
  }
}

/** What POST /v1/comments and `c2c-agent comment` take: the clip's path, the text, the frame. */
export interface CommentRequest {
  path?: unknown;
  text?: unknown;
  frame?: unknown;
}

/**
 * A comment, checked before anything is queued: the path by the upload rules
 * (a clip still recorded may be named by its finished name: NAME.EXT while
 * NAME.EXT.part is written), the text one to MAX_COMMENT_CHARS characters, the
 * frame a whole number from 0.
 */
export async function makeComment(req: CommentRequest, roots: UploadRoots, at: Moment): Promise<CommentPayload> {
  if (typeof req.path !== 'string' || req.path === '') throw new CommentRefused(400, 'path must be the clip\'s file path (a string)');
  if (typeof req.text !== 'string' || req.text.trim() === '') throw new CommentRefused(400, 'text must be the comment (a string that is not empty)');
  if (req.text.length > MAX_COMMENT_CHARS) throw new CommentRefused(400, `text is ${req.text.length} characters; at most ${MAX_COMMENT_CHARS}`);
  if (req.frame !== undefined && (typeof req.frame !== 'number' || !Number.isSafeInteger(req.frame) || req.frame < 0)) throw new CommentRefused(400, `frame ${JSON.stringify(req.frame)} must be a whole number of frames from 0`);
  let v = await resolveUploadPath(req.path, roots);
  let finished: string | undefined;
  if (!v.ok && v.status === 404 && !req.path.endsWith(PART)) {
    // The clip is still recorded under its working name.
    const recording = await resolveUploadPath(`${req.path}${PART}`, roots);
    if (recording.ok) {
      v = recording;
      finished = recording.file.path.slice(0, -PART.length);
    }
  }
  if (!v.ok) throw new CommentRefused(v.status, `${v.reason}; no comment was queued`);
  const p = v.file.path;
  const finalPath = finished ?? (p.endsWith(PART) ? p.slice(0, -PART.length) : p);
  return { path: p, finalPath, name: path.basename(finalPath), dev: v.file.dev, ino: v.file.ino, text: req.text, ...(req.frame !== undefined && { frame: req.frame as number }), at };
}

/** The payload when it has the shape this agent writes; undefined otherwise. */
export function commentOf(v: unknown): CommentPayload | undefined {
  const c = v as Partial<CommentPayload> | null;
  if (typeof c !== 'object' || c === null || typeof c.path !== 'string' || typeof c.finalPath !== 'string' || typeof c.text !== 'string') return undefined;
  if (typeof c.dev !== 'number' || typeof c.ino !== 'number') return undefined;
  if (c.frame !== undefined && !Number.isSafeInteger(c.frame)) return undefined;
  return c as CommentPayload;
}

/** Where the clip's asset stands: its id, an upload that ended without one to comment on, or nothing yet. */
export type AssetLookup = { kind: 'asset'; assetId: string } | { kind: 'ended'; reason: string } | { kind: 'waiting' };

/**
 * The clip's asset from the uploads in the queue: the newest upload item of
 * the same file (device and inode, at its working or finished path) decides.
 * Created (an asset id in its progress, the upload going or done): that
 * asset. Ended without finishing (dead-lettered, cancelled, dropped): the
 * comment has nothing to go on. Not created yet, or no upload at all yet
 * (auto-upload off, the window closed, the clip not finished): waiting.
 */
export function assetOf(items: readonly OutboxItem[], c: Pick<CommentPayload, 'dev' | 'ino' | 'path' | 'finalPath'>): AssetLookup {
  let latest: OutboxItem | undefined;
  for (const i of items) {
    if (!UPLOAD_KINDS.has(i.kind)) continue;
    const p = i.payload as { path?: unknown; finalPath?: unknown; dev?: unknown; ino?: unknown } | null;
    if (p === null || typeof p !== 'object' || p.dev !== c.dev || p.ino !== c.ino) continue;
    const paths = [p.path, p.finalPath];
    if (!paths.includes(c.path) && !paths.includes(c.finalPath)) continue;
    latest = i;
  }
  if (latest === undefined) return { kind: 'waiting' };
  const assetId = (latest.progress as { assetId?: unknown } | null | undefined)?.assetId;
  if (latest.state === 'pending' || latest.state === 'done') return typeof assetId === 'string' && assetId !== '' ? { kind: 'asset', assetId } : latest.state === 'done' ? { kind: 'ended', reason: 'its upload finished without an asset id this agent kept' } : { kind: 'waiting' };
  return { kind: 'ended', reason: `its upload ended without finishing (${latest.reason ?? latest.state})` };
}
