// The uploads feature's units at start (feature.ts): the index of what went,
// the window, the media watcher, the unit that queues (uploads-unit.ts) and
// the one that says what blocks uploads (upload-blocks.ts).
import path from 'node:path';
import { UNIT_CREDENTIALS_DIR } from '../auth/credentials-systemd.js';
import { realtimeUploadsOn, type Settings } from '../config/types.js';
import type { FeatureContext, FeatureParts } from '../core/feature.js';
import { fileTypeOf } from './file-type.js';
import type { UploadsService } from './feature.js';
import { LastParts } from './last-part.js';
import { MediaWatcher, type GrowingFile } from './media-watcher.js';
import { UploadBlocks } from './upload-blocks.js';
import { uploadRows } from './upload-rows.js';
import { UploadUrls } from './upload-urls.js';
import { UploadWindow } from './upload-window.js';
import { UploadedIndex } from './uploaded-index.js';
import { UploadsUnit } from './uploads-unit.js';

/**
 * The agent's own dirs, whose files are never uploaded whatever a root resolves to (a root swapped
 * for a link to the state dir would hold credentials.json): the state, runtime and credentials
 * dirs and those of the config, token and client secret files. One that holds a configured root
 * as written (a media dir inside the state dir) is left out, or that root could never upload.
 */
export function ownDirs(settings: Pick<Settings, 'stateDir' | 'runtimeDir' | 'credentialsDir' | 'configFile' | 'tokenFile' | 'clientSecretFile'>, roots: readonly string[]): string[] {
  const dirs = [settings.stateDir, settings.runtimeDir, settings.credentialsDir ?? UNIT_CREDENTIALS_DIR, path.dirname(settings.configFile), path.dirname(settings.tokenFile), ...(settings.clientSecretFile === undefined ? [] : [path.dirname(settings.clientSecretFile)])].map((d) => path.resolve(d));
  const holds = (dir: string, root: string): boolean => {
    const rel = path.relative(dir, path.resolve(root));
    return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
  };
  return [...new Set(dirs)].filter((d) => !roots.some((r) => holds(d, r)));
}

export function buildUploads(ctx: FeatureContext): FeatureParts {
  const { settings, clock, logger, bus, services } = ctx;
  const specs = ctx.profile.channels;
  const queueDir = ctx.paths.queue;
  const index = new UploadedIndex(ctx.paths.state, { logger });
  const win = settings.uploadWindow;
  const window =
    win === undefined
      ? undefined
      : new UploadWindow({
          ...win,
          clock,
          clockOffsetMs: () => ctx.api.lastMeta?.clockOffsetMs,
          onOpen: () => {
            bus.emit('uploadWindowOpened', {});
            bus.emit('outboxWorkReady', {});
          },
          logger,
        });
  const urls = new UploadUrls(queueDir);
  // Where files may be taken from by path: the local API's checks, again for a changed file before it goes once more, and on the descriptor each upload reads from.
  const rootList = [...(settings.mediaDir === undefined ? [] : [settings.mediaDir]), ...(settings.uploadRoots ?? [])];
  const roots = { roots: rootList, channelKeys: specs.map((c) => c.key), own: ownDirs(settings, rootList) };
  // Where a cancel meets the moment an upload's last bytes go.
  const lastParts = new LastParts();
  const realtimeOn = realtimeUploadsOn(settings, ctx.profile);
  const watcher =
    settings.mediaDir === undefined
      ? undefined
      : new MediaWatcher({
          dir: settings.mediaDir,
          channelKeys: specs.map((c) => c.key),
          clock,
          settleMs: settings.mediaSettleSeconds * 1000,
          onReady: (f) => bus.emit('mediaFileReady', { file: { ...f, ...fileTypeOf(f.name) } }),
          ...(realtimeOn && { onGrowing: (f: GrowingFile) => bus.emit('mediaFileGrowing', { file: { ...f, ...fileTypeOf(f.name) } }) }),
          onSkipped: () => bus.emit('statusChanged', {}),
          logger,
        });
  const autoUpload = (): boolean => services.get('prefs')?.prefs().autoUpload ?? true;
  // What keeps uploads from going (no media dir, autoUpload off, the window closed, refused attempts): in the uploads section, and logged once each.
  const blocks = new UploadBlocks({ mediaDir: settings.mediaDir, autoUpload, held: (): number => unit.heldCount, ...(window && { window }), failing: () => ctx.outbox.failing(), clock, bus, logger });
  const unit: UploadsUnit = new UploadsUnit({
    autoUpload,
    ...(watcher && { watcher }),
    ...(window && { window }),
    index,
    outbox: ctx.outbox,
    queueDir,
    roots,
    settleMs: settings.mediaSettleSeconds * 1000,
    urls,
    clock,
    logger,
    bus,
    // The workers' (workers-build.ts), once loaded.
    recordings: () => services.get('recordings')?.recordings() ?? [],
    close: () => services.get('storage')?.close(),
    lastParts,
    blocked: () => blocks.current(),
  });
  const service: UploadsService = { unit, rows: () => uploadRows(ctx.outbox.items(), new Set(ctx.outbox.inFlight())), roots, index, urls, lastParts, window };
  services.provide('uploads', service);
  return { units: [unit, blocks] };
}
