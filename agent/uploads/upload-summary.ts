// Upload progress in a few words, from the status document's uploads section:
// the STATUS= line (uploads-unit.ts) and `status` (cli/status.ts) say the same.
import type { UploadsSection } from '../core/status-document.js';
import { formatBytes, formatRate } from '../lib/text.js';

/** "uploading 3 files, 1.2 GiB left, 4.5 MiB/s; 1 recording"; undefined when nothing waits. The rate only while bytes move. */
export function uploadProgress(u: Pick<UploadsSection, 'files' | 'bytesLeft' | 'bytesPerSecond' | 'recording'>): string | undefined {
  if (u.files === 0) return undefined;
  const rate = u.bytesPerSecond > 0 ? `, ${formatRate(u.bytesPerSecond)}` : '';
  const recording = u.recording && u.recording.length > 0 ? `; ${u.recording.length} recording` : '';
  return `uploading ${u.files} file${u.files === 1 ? '' : 's'}, ${formatBytes(u.bytesLeft)} left${rate}${recording}`;
}
