// Upload progress in a few words, from the status document's uploads section:
// the STATUS= line (uploads-unit.ts) and `status` (cli/status.ts) say the same.
// What keeps uploads from going (the section's `blocked`, upload-blocks.ts)
// is said with it, never hidden behind "uploading".
import type { UploadBlock, UploadsSection } from './section.js';
import { formatBytes, formatDuration, formatRate, oneLine } from '../lib/text.js';

type Figures = Pick<UploadsSection, 'files' | 'bytesLeft' | 'bytesPerSecond' | 'recording' | 'blocked'>;

/** Blocks that hold back what is queued (the others keep clips from being queued). */
const HOLDS_QUEUED = new Set<UploadBlock['kind']>(['window-closed', 'refused']);

/**
 * "uploading 3 files, 1.2 GiB left, 4.5 MiB/s; 1 recording", or "1 file
 * waiting, 977 KiB left" while the window is closed or storage refuses;
 * undefined when nothing waits. The rate only while bytes move.
 */
export function uploadFigures(u: Figures): string | undefined {
  if (u.files === 0) return undefined;
  const held = (u.blocked ?? []).some((b) => HOLDS_QUEUED.has(b.kind));
  const rate = u.bytesPerSecond > 0 && !held ? `, ${formatRate(u.bytesPerSecond)}` : '';
  const recording = u.recording && u.recording.length > 0 ? `; ${u.recording.length} recording` : '';
  const files = `${u.files} file${u.files === 1 ? '' : 's'}`;
  return `${held ? `${files} waiting` : `uploading ${files}`}, ${formatBytes(u.bytesLeft)} left${rate}${recording}`;
}

/** A time in the status document as status shows times: "2024-05-01T10:00:00.000Z (2m ago)", the second part only with `now` (agent ms). */
function when(m: { at: string; monotonic: number }, now: number | undefined): string {
  if (now === undefined) return m.at;
  const d = now - m.monotonic;
  return `${m.at} (${d >= 0 ? `${formatDuration(d)} ago` : `in ${formatDuration(-d)}`})`;
}

/** One block in words, with the label `status` puts before it. */
export function blockText(b: UploadBlock, now?: number): { label: string; text: string } {
  switch (b.kind) {
    case 'no-media-dir':
      return { label: 'media dir', text: 'none set: clips are not uploaded by themselves, only files given to c2c-agent upload (set mediaDir)' };
    case 'auto-upload-off':
      return { label: 'auto-upload', text: `off: ${b.waiting === undefined ? 'clips found are' : `${b.waiting} clip${b.waiting === 1 ? '' : 's'} found ${b.waiting === 1 ? 'is' : 'are'}`} not queued until it is on (c2c-agent prefs autoUpload=on)` };
    case 'window-closed':
      return { label: 'window', text: `upload window closed${b.until ? ` until ${when(b.until, now)}` : ''}: uploads wait for it` };
    case 'refused':
      return {
        label: 'not sent',
        text: `refused: ${b.attempts ?? '?'} attempts in a row failed${b.since ? ` since ${when(b.since, now)}` : ''}; last: ${oneLine(b.reason ?? '?', 200)}`,
      };
  }
}

/** Progress and every block, one line (the STATUS= line): nothing that keeps uploads from going is left out. */
export function uploadProgress(u: Figures, now?: number): string | undefined {
  const parts = [uploadFigures(u), ...(u.blocked ?? []).map((b) => (b.kind === 'no-media-dir' ? 'no media dir' : blockText(b, now).text.replace(/^off:/, 'auto-upload off:')))];
  const said = parts.filter((p): p is string => p !== undefined);
  return said.length === 0 ? undefined : said.join('; ');
}
