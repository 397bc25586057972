// The upload pipeline (uploads-idle.ts loads it on first use): the index of
// what went, the presigned URLs kept beside the queue, where a cancel meets
// the last part, and the unit that queues (uploads-unit.ts). The media
// watcher and the window are the idle part's, running already: the unit
// only reads their figures.
import type { FeatureContext } from '../core/feature.js';
import type { SkippedView } from './media-watcher.js';
import { LastParts } from './last-part.js';
import type { UploadRoots } from './upload-paths.js';
import { UploadUrls } from './upload-urls.js';
import type { UploadWindow } from './upload-window.js';
import { UploadedIndex } from './uploaded-index.js';
import { UploadsUnit } from './uploads-unit.js';
import type { UploadBlock } from './section.js';

/** What the pipeline holds, for the upload routes and the workers. */
export interface UploadsPipeline {
  unit: UploadsUnit;
  index: UploadedIndex;
  urls: UploadUrls;
  lastParts: LastParts;
  window: UploadWindow | undefined;
  roots: UploadRoots;
}

export interface PipelineInput {
  watcher?: { skipped?(): SkippedView; missingDir?(): string | undefined };
  window?: UploadWindow;
  roots: UploadRoots;
  autoUpload: () => boolean;
  blocked: () => UploadBlock[];
}

export function buildPipeline(ctx: FeatureContext, i: PipelineInput): UploadsPipeline {
  const { settings, clock, logger, bus, services } = ctx;
  const index = new UploadedIndex(ctx.paths.state, { logger });
  const urls = new UploadUrls(ctx.paths.queue);
  // Where a cancel meets the moment an upload's last bytes go (shared with the workers).
  const lastParts = new LastParts();
  const { watcher, window } = i;
  const unit = new UploadsUnit({
    autoUpload: i.autoUpload,
    // Started and stopped by the idle part (uploads-idle.ts); the unit reads their figures.
    ...(watcher && { watcher: { start: () => undefined, stop: () => undefined, skipped: () => watcher.skipped?.() ?? { entries: [], more: 0 }, missingDir: () => watcher.missingDir?.() } }),
    ...(window && { window: { start: () => Promise.resolve(), stop: () => undefined } }),
    index,
    outbox: ctx.outbox,
    queueDir: ctx.paths.queue,
    roots: i.roots,
    settleMs: settings.mediaSettleSeconds * 1000,
    urls,
    clock,
    logger,
    bus,
    // The workers' (workers-build.ts), once loaded.
    recordings: () => services.get('recordings')?.recordings() ?? [],
    close: () => services.get('storage')?.close(),
    lastParts,
    blocked: i.blocked,
  });
  return { unit, index, urls, lastParts, window, roots: i.roots };
}
