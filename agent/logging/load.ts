// What feature.ts loads on first use: the local API's handlers (the first
// press or comment asked for) and the outbox's workers (the first press or
// comment in the queue), each built from the feature's context. What other
// features keep is asked of them as services (core/feature.ts): the upload
// rules' roots of the uploads feature, the channel record of the channels
// feature.
import { ChannelMapStore } from '../channels/channel-map.js';
import type { FeatureContext } from '../core/feature.js';
import { ApiError, type Handler } from '../core/routes.js';
import type { Worker } from '../outbox/dispatcher.js';
import type { UploadRoots } from '../uploads/upload-paths.js';
import { loggingHandlers } from './handlers.js';
import type { LoggingHost } from './host.js';
import { loggingEndpoints } from './logging-api.js';
import { CommentWorker, PressWorker } from './workers.js';

function hostOf(ctx: FeatureContext): LoggingHost {
  const host = ctx.services.get('logging');
  if (host === undefined) throw new Error('real-time logging is not built');
  return host;
}

/** Where a comment's clip may be: the uploads feature's roots (the media dir, the upload roots, the channel folders; never the agent's own dirs). */
function rootsOf(ctx: FeatureContext): UploadRoots {
  const roots = ctx.services.get('uploads')?.roots;
  if (roots === undefined) throw new ApiError(503, 'unavailable', 'the uploads are not running yet, and a comment is taken only by their path rules; try again in a moment');
  return roots;
}

export function handlers(ctx: FeatureContext): Readonly<Record<string, Handler>> {
  return loggingHandlers(ctx, { host: hostOf(ctx), roots: () => rootsOf(ctx), items: () => ctx.outbox.items() });
}

export function workers(ctx: FeatureContext): readonly Worker[] {
  // The channel record the channels feature keeps (its only writer): read, never written here.
  let own: ChannelMapStore | undefined;
  const channelIds = (): Promise<Record<string, string>> => (ctx.services.get('channels')?.map ?? (own ??= new ChannelMapStore(ctx.paths.state))).load();
  const deps = {
    api: loggingEndpoints(ctx.api.transport),
    clock: ctx.clock,
    bootId: ctx.bootId,
    profile: ctx.profile,
    channelIds,
    items: () => ctx.outbox.items(),
    bus: ctx.bus,
    logger: ctx.logger,
  };
  return [new PressWorker(deps), new CommentWorker(deps)];
}
