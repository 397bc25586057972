// Media uploads as a feature (core/feature.ts). At start, what watches: the
// media watcher, the window and what blocks uploads (uploads-build.ts,
// uploads-idle.ts); the pipeline (pipeline.ts: the queueing of the finds and
// of the files handed over through incoming/, the index of what went, by
// hand) loads with the first clip or upload item. The workers that send (upload-worker.ts,
// realtime-worker.ts, the storage client) load with the first `upload` or
// `realtime-upload` item (workers-build.ts), and the local API's upload
// routes with their first call (upload-handlers.ts).
import type { Feature } from '../core/feature.js';
import { handlersOf } from '../core/routes.js';
import type { StorageClient } from '../api/storage.js';
import type { UploadsPipeline } from './pipeline.js';
import type { RecordingView } from './realtime-worker.js';
import type { UploadRoots } from './upload-paths.js';
import type { UploadRow } from './upload-rows.js';
import { REALTIME_KIND, UPLOAD_KIND } from './kinds.js';
import { uploadsSection } from './section.js';
import './events.js';

/** What the uploads feature shares: the rate, the rows the API lists, the roots, and the pipeline, loaded on first use (uploads-idle.ts). */
export interface UploadsService {
  bytesPerSecond(): number;
  rows(): UploadRow[];
  /** The media dir and the upload roots a path must be inside (upload-paths.ts). */
  roots: UploadRoots;
  pipeline(): Promise<UploadsPipeline>;
}

declare module '../core/feature.js' {
  interface FeatureServices {
    uploads: UploadsService;
    /** The storage client, once the workers loaded. */
    storage: Pick<StorageClient, 'dropConnectionsOn' | 'close'>;
    /** The recordings uploading in real time, once the workers loaded. */
    recordings: { recordings(): RecordingView[] };
  }
}

export const uploads: Feature = {
  name: 'uploads',
  section: { name: 'uploads', check: uploadsSection },
  routes: {
    routes: [
      { method: 'GET', path: '/v1/uploads', access: 'read' },
      { method: 'POST', path: '/v1/uploads', access: 'write' },
      { method: 'DELETE', path: '/v1/uploads', access: 'write' },
      { method: 'DELETE', path: '/v1/uploads/{id}', access: 'write' },
      { method: 'PATCH', path: '/v1/uploads/{id}', access: 'write' },
    ],
    load: async (ctx) => {
      const { registerUploadHandlers } = await import('./upload-handlers.js');
      const u = ctx.services.get('uploads');
      if (u === undefined) throw new Error('uploads: the feature was not built');
      const p = await u.pipeline();
      return handlersOf((routes) => registerUploadHandlers(routes, { uploads: p.unit, rows: u.rows, roots: u.roots }));
    },
  },
  outbox: { kinds: [UPLOAD_KIND, REALTIME_KIND], load: async (ctx) => (await import('./workers-build.js')).uploadWorkers(ctx) },
  build: async (ctx) => (await import('./uploads-build.js')).buildUploads(ctx),
};
