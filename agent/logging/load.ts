// What feature.ts loads on first use: the local API's handlers (the first
// press or comment asked for) and the outbox's workers (the first press or
// comment in the queue), each built from the feature's context.
import { loggingEndpoints } from './logging-api.js';
import { ChannelMapStore } from '../channels/channel-map.js';
import type { FeatureContext } from '../core/feature.js';
import type { Handler } from '../core/routes.js';
import { ownDirs } from '../daemon/units.js';
import type { Worker } from '../outbox/dispatcher.js';
import type { UploadRoots } from '../uploads/upload-paths.js';
import { loggingHandlers } from './handlers.js';
import type { LoggingHost } from './host.js';
import { CommentWorker, PressWorker } from './workers.js';

function hostOf(ctx: FeatureContext): LoggingHost {
  const host = ctx.services.get('logging');
  if (host === undefined) throw new Error('real-time logging is not built');
  return host;
}

/**
 * Where a comment's clip may be: the upload rules' roots as the daemon has
 * them (the media dir, the upload roots, the channel folders; never the
 * agent's own dirs).
 */
export function rootsOf(ctx: Pick<FeatureContext, 'settings' | 'profile'>): UploadRoots {
  const { settings } = ctx;
  const roots = [...(settings.mediaDir === undefined ? [] : [settings.mediaDir]), ...(settings.uploadRoots ?? [])];
  return { roots, channelKeys: ctx.profile.channels.map((c) => c.key), own: ownDirs(settings, roots) };
}

export function handlers(ctx: FeatureContext): Readonly<Record<string, Handler>> {
  return loggingHandlers(ctx, { host: hostOf(ctx), roots: () => rootsOf(ctx), items: () => ctx.outbox.items() });
}

export function workers(ctx: FeatureContext): readonly Worker[] {
  // The channel record the channels unit keeps (the daemon's only writer of it): read, never written here.
  const map = new ChannelMapStore(ctx.paths.state);
  const deps = {
    api: loggingEndpoints(ctx.api.transport),
    clock: ctx.clock,
    bootId: ctx.bootId,
    profile: ctx.profile,
    channelIds: () => map.load(),
    items: () => ctx.outbox.items(),
    bus: ctx.bus,
    logger: ctx.logger,
  };
  return [new PressWorker(deps), new CommentWorker(deps)];
}
