// The uploads section's figures (section.ts), for the status document and
// the STATUS= line alike: files and bytes left, the rate, the media-dir
// entries skipped, the recordings uploading in real time, what blocks uploads.
import type { OutboxItem } from '../outbox/types.js';
import { REALTIME_KIND, realtimeBytesDone, realtimeBytesTotal } from './realtime-item.js';
import type { RecordingView } from './realtime-worker.js';
import type { UploadBlock, UploadsSection } from './section.js';
import { UPLOAD_KIND, bytesDone, type UploadPayload } from './upload-item.js';
import type { SkippedView } from './media-watcher.js';

export interface FiguresDeps {
  outbox: { pending(kind?: string): OutboxItem[] };
  watcher?: { skipped?(): SkippedView; missingDir?(): string | undefined };
  recordings?: () => RecordingView[];
  blocked?: () => UploadBlock[];
}

/** Uploads waiting or running, whole files and recordings. */
export function filesLeft(d: Pick<FiguresDeps, 'outbox'>): number {
  return d.outbox.pending(UPLOAD_KIND).length + d.outbox.pending(REALTIME_KIND).length;
}

/** The figures `status` shows; `bytesPerSecond` is the rate meter's (0 once nothing is left). */
export function uploadFigures(d: FiguresDeps, bytesPerSecond: number): UploadsSection {
  const pending = d.outbox.pending(UPLOAD_KIND);
  const recording = d.outbox.pending(REALTIME_KIND);
  const left = pending.reduce((n, i) => n + leftOf(i), 0) + recording.reduce((n, i) => n + Math.max(0, realtimeBytesTotal(i) - realtimeBytesDone(i)), 0);
  const recordings = d.recordings?.();
  const skipped = d.watcher?.skipped?.();
  const mediaDirMissing = d.watcher?.missingDir?.();
  const blocked = d.blocked?.();
  return {
    files: pending.length + recording.length,
    bytesLeft: left,
    bytesPerSecond,
    ...(skipped !== undefined && { skipped }),
    ...(mediaDirMissing !== undefined && { mediaDirMissing }),
    ...(recordings !== undefined && recordings.length > 0 && { recording: recordings }),
    ...(blocked !== undefined && blocked.length > 0 && { blocked }),
  };
}

function leftOf(item: OutboxItem): number {
  return (item.payload as UploadPayload).size - bytesDone(item);
}
