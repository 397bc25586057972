// Uploads as the local API lists them (GET /v1/uploads, `upload` lines on
// GET /v1/events): a media file's upload and a recording's real-time upload
// alike, each with its id, priority and reason.
import type { OutboxItem } from '../outbox/types.js';
import { uploadView, type UploadView } from './upload-item.js';

export interface UploadRow extends UploadView {
  id: string;
  priority: 'high' | 'normal';
  reason?: string;
}

/** The upload items among `items` as rows, in queue order; `inFlight` holds the ids running now. */
export function uploadRows(items: OutboxItem[], inFlight: ReadonlySet<string>): UploadRow[] {
  const rows: UploadRow[] = [];
  for (const item of items) {
    const view = uploadView(item, inFlight.has(item.id));
    if (view === undefined) continue;
    rows.push({ id: item.id, ...view, priority: item.urgent === true ? 'high' : 'normal', ...(item.reason !== undefined && { reason: item.reason }) });
  }
  return rows;
}
