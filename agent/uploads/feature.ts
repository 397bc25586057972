// Media uploads as a feature (core/feature.ts). At start, what watches:
// the media watcher, the queueing of its finds and of the files handed over
// through incoming/, the index of what went, the window and what blocks
// uploads (uploads-build.ts). The workers that send (upload-worker.ts,
// realtime-worker.ts, the storage client) load with the first `upload` or
// `realtime-upload` item (workers-build.ts), and the local API's upload
// routes with their first call (upload-handlers.ts).
import type { Feature } from '../core/feature.js';
import { handlersOf } from '../core/routes.js';
import type { StorageClient } from '../api/storage.js';
import type { LastParts } from './last-part.js';
import type { RecordingView } from './realtime-worker.js';
import type { UploadRoots } from './upload-paths.js';
import type { UploadRow } from './upload-rows.js';
import type { UploadUrls } from './upload-urls.js';
import type { UploadWindow } from './upload-window.js';
import type { UploadedIndex } from './uploaded-index.js';
import type { UploadsUnit } from './uploads-unit.js';
import { REALTIME_KIND, UPLOAD_KIND } from './kinds.js';
import { uploadsSection } from './section.js';
import './events.js';

/** What the uploads feature shares: its unit (queueing, cancel, priority, the rate), the rows the API lists, and what its workers use beside the unit. */
export interface UploadsService {
  unit: UploadsUnit;
  rows(): UploadRow[];
  /** The media dir and the upload roots a path must be inside (upload-paths.ts). */
  roots: UploadRoots;
  index: UploadedIndex;
  urls: UploadUrls;
  lastParts: LastParts;
  window: UploadWindow | undefined;
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
      return handlersOf((routes) => registerUploadHandlers(routes, { uploads: u.unit, rows: u.rows, roots: u.roots }));
    },
  },
  outbox: { kinds: [UPLOAD_KIND, REALTIME_KIND], load: async (ctx) => (await import('./workers-build.js')).uploadWorkers(ctx) },
  build: async (ctx) => (await import('./uploads-build.js')).buildUploads(ctx),
};
