// The uploads through the local API: list, queue (one file or a batch, with
// a priority), cancel one or all, change one's priority. The checks on a
// path are upload-paths.ts's; the queue's rules (one file, one upload; a
// cancelled file never again) are UploadsUnit's.
import type { UploadRow } from './upload-rows.js';
import { resolveUploadPath, type UploadRoots } from './upload-paths.js';
import type { UploadsUnit } from './uploads-unit.js';
import { COMPLETED_DESPITE_CANCEL, type UploadPayload } from './upload-item.js';
import { objectBody } from '../localapi/body.js';
import { ApiError, apiErrorOf, badRequest, notFound, type HandlerMap } from '../core/routes.js';


export interface UploadHandlerDeps {
  uploads: Pick<UploadsUnit, 'queueByHand' | 'cancel' | 'cancelAll' | 'setPriority'>;
  rows: () => UploadRow[];
  roots: UploadRoots;
  /** The upload lines of GET /v1/events (upload-lines.ts): looked at soon after a change made here. */
  events?: { uploadsSoon(): void };
}

/** A batch larger than this is refused: a UI that selects a whole card sends several. */
export const MAX_BATCH = 500;

function priorityOf(v: unknown, required: boolean): boolean {
  if (v === undefined && !required) return false;
  if (v === 'high') return true;
  if (v === 'normal') return false;
  throw badRequest(`priority must be "high" or "normal", not ${JSON.stringify(v) ?? 'missing'}`);
}

export function registerUploadHandlers(routes: HandlerMap, d: UploadHandlerDeps): void {
  routes.add('GET', '/v1/uploads', 'read', () => ({ status: 200, body: { uploads: d.rows() } }));

  routes.add('POST', '/v1/uploads', 'write', async (req) => {
    const body = objectBody(req.body);
    const paths = body.paths;
    if (!Array.isArray(paths) || paths.length === 0 || !paths.every((p) => typeof p === 'string')) throw badRequest('paths must be a non-empty list of file paths');
    if (paths.length > MAX_BATCH) throw new ApiError(413, 'too-large', `${paths.length} paths in one request; at most ${MAX_BATCH}`);
    const urgent = priorityOf(body.priority, false);
    // Every path is checked before anything is queued: one refusal and nothing of the batch goes.
    const files: UploadPayload[] = [];
    for (const p of paths as string[]) {
      const v = await resolveUploadPath(p, d.roots);
      if (!v.ok) throw new ApiError(v.status, v.status === 403 ? 'forbidden' : v.status === 404 ? 'not-found' : 'bad-request', `${v.reason}; nothing was queued`);
      files.push(v.file);
    }
    const queued = await d.uploads.queueByHand(files, urgent).catch((err: unknown) => {
      throw apiErrorOf(err);
    });
    // Each answer names the path as the client gave it (that is how a client matches them up); `file` is where it led, when that differs.
    const given = paths as string[];
    const uploads = queued.map((u, i) => ({ ...u, path: given[i] ?? u.path, ...(given[i] !== u.path && { file: u.path }) }));
    d.events?.uploadsSoon();
    return { status: 202, body: { uploads } };
  });

  routes.add('DELETE', '/v1/uploads', 'write', async () => {
    const cancelled = await d.uploads.cancelAll();
    d.events?.uploadsSoon();
    return { status: 200, body: { cancelled } };
  });

  routes.add('DELETE', '/v1/uploads/{id}', 'write', async (req) => {
    const id = req.params.id!;
    const r = await d.uploads.cancel(id);
    if (r === 'not-found') throw notFound(`no upload ${id}`);
    if (r === 'done') throw new ApiError(409, 'conflict', `upload ${id} is done already`);
    const row = d.rows().find((u) => u.id === id);
    if (r !== 'ended' || row?.state === 'cancelled') d.events?.uploadsSoon();
    // Its last part was on its way and storage took it: the service completed the asset; saying "cancelled" would be untrue.
    if (r === COMPLETED_DESPITE_CANCEL) return { status: 200, body: { upload: { ...(row ?? { id }), state: COMPLETED_DESPITE_CANCEL } } };
    // Storage has not answered that last part yet: accepted, and settled by its answer (the row's state tells, as do the events).
    if (r === 'last-part-on-its-way') return { status: 202, body: { upload: row ?? { id } } };
    // Ended otherwise: cancelled already is what was asked; failed (dead-lettered, refused) was never cancelled, and saying so would be untrue.
    if (r === 'ended' && row?.state !== 'cancelled') throw new ApiError(409, 'conflict', `upload ${id} is no longer waiting: it ended ${row?.state ?? 'already'}${row?.reason !== undefined ? ` (${row.reason})` : ''}`);
    return { status: 200, body: { upload: row ?? { id } } };
  });

  routes.add('PATCH', '/v1/uploads/{id}', 'write', async (req) => {
    const id = req.params.id!;
    const high = priorityOf(objectBody(req.body).priority, true);
    const r = await d.uploads.setPriority(id, high);
    if (r === 'not-found') throw notFound(`no upload ${id}`);
    if (r === 'ended') throw new ApiError(409, 'conflict', `upload ${id} is no longer waiting (done, failed or cancelled)`);
    d.events?.uploadsSoon();
    return { status: 200, body: { upload: d.rows().find((u) => u.id === id) ?? { id } } };
  });
}
