// Real-time logging through the local API (docs/local-api.md): a press of a
// profile input, `POST /v1/inputs/{channel}/{index}`, and a comment on a clip,
// `POST /v1/comments`. Both answer 202 once the item is on flash; a press the
// profile has no input for is a 404, a malformed timecode or rate a 400, a
// comment's path refused as an upload's would be; a refusal queues nothing.
// Loaded on the first call of either (core/feature.ts, RouteGroup).
import type { FeatureContext } from '../core/feature.js';
import { ApiError, type Handler } from '../core/routes.js';
import { objectBody } from '../localapi/body.js';
import type { UploadRoots } from '../uploads/upload-paths.js';
import { assetOf, COMMENT_PRIORITY, CommentRefused, makeComment } from './comment.js';
import { COMMENT_KIND, PRESS_KIND, type LoggingHost } from './host.js';
import { makePress, PRESS_PRIORITY, PressRefused, type Moment, type PressSource } from './press.js';

export const PRESS_ROUTE = { method: 'POST', path: '/v1/inputs/{channel}/{index}', access: 'write' } as const;
export const COMMENT_ROUTE = { method: 'POST', path: '/v1/comments', access: 'write' } as const;

/** Why a put failed, as a refusal: the disk (507) or anything else (503). */
function putFailed(err: unknown): ApiError {
  const message = err instanceof Error ? err.message : String(err);
  return new ApiError(/ENOSPC|EROFS|EIO|cap/.test(message) ? 507 : 503, 'unavailable', `nothing was queued: ${message}`);
}

export interface LoggingHandlerDeps {
  host: Pick<LoggingHost, 'put'>;
  /** Where a comment's clip may be (the upload rules' roots). */
  roots: () => UploadRoots;
  /** The queue's items, to tell a comment that will wait for its asset ('held'). */
  items: FeatureContext['outbox']['items'];
}

/** The moment a request came, on this boot. */
const momentOf = (ctx: FeatureContext): Moment => ({ mono: ctx.clock.now(), boot: ctx.bootId, wall: ctx.clock.wallNow() });

export function loggingHandlers(ctx: FeatureContext, d: LoggingHandlerDeps): Record<string, Handler> {
  return {
    [`${PRESS_ROUTE.method} ${PRESS_ROUTE.path}`]: async (req) => {
      const at = momentOf(ctx);
      const body = objectBody(req.body, { optional: true });
      const source: PressSource = body.source === 'cli' ? 'cli' : 'api';
      let payload;
      try {
        payload = makePress(ctx.profile, req.params.channel!, req.params.index!, body, at, source);
      } catch (err) {
        if (err instanceof PressRefused) throw new ApiError(err.status, err.status === 404 ? 'not-found' : 'bad-request', `${err.message}; nothing was queued`);
        throw err;
      }
      const item = await d.host.put(PRESS_KIND, payload, PRESS_PRIORITY).catch((err: unknown) => {
        throw putFailed(err);
      });
      return { status: 202, body: { press: { id: item.id, channel: payload.channel, index: payload.index, state: 'queued' } } };
    },
    [`${COMMENT_ROUTE.method} ${COMMENT_ROUTE.path}`]: async (req) => {
      const at = momentOf(ctx);
      const body = objectBody(req.body);
      let payload;
      try {
        payload = await makeComment(body, d.roots(), at);
      } catch (err) {
        if (err instanceof CommentRefused) throw new ApiError(err.status, err.status === 404 ? 'not-found' : err.status === 403 ? 'forbidden' : 'bad-request', err.message);
        throw err;
      }
      const state = assetOf(d.items(), payload).kind === 'asset' ? 'queued' : 'held';
      const item = await d.host.put(COMMENT_KIND, payload, COMMENT_PRIORITY, state).catch((err: unknown) => {
        throw putFailed(err);
      });
      return { status: 202, body: { comment: { id: item.id, state } } };
    },
  };
}
