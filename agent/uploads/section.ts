// The status document's `uploads` section: what is left and how fast it
// goes, what the watcher skipped, recordings uploading in real time, and
// what keeps uploads from going; declared once (core/shape.ts).
import { count, keptListOf, listOf, obj, oneOf, optional, str, type ShapeOf } from '../core/shape.js';
import { moment } from '../core/status-document.js';

/**
 * One thing that keeps a camera from uploading (docs/troubleshooting.md,
 * "Nothing is uploaded"): `no-media-dir` (no mediaDir: clips are not taken by
 * themselves), `auto-upload-off` (the preference; `waiting`: clips found
 * and held back), `window-closed` (the upload window; `until`: its next
 * opening, when known), `refused` (storage or the service refuses every
 * attempt: `since` the first, `attempts`, `reason` the last error).
 */
export const UPLOAD_BLOCK_KINDS = ['no-media-dir', 'auto-upload-off', 'window-closed', 'refused'] as const;
export type UploadBlockKind = (typeof UPLOAD_BLOCK_KINDS)[number];
const uploadBlock = obj({ kind: oneOf(UPLOAD_BLOCK_KINDS), since: optional(moment), until: optional(moment), waiting: optional(count), attempts: optional(count), reason: optional(str) });
export type UploadBlock = ShapeOf<typeof uploadBlock>;

/** Media-dir entries the watcher will not take: the first ones by name and reason, the rest counted. */
const skippedSection = obj({ entries: listOf(obj({ name: str, reason: str })), more: count });
export type SkippedSection = ShapeOf<typeof skippedSection>;

/** One recording uploading in real time: bytes on disk and sent, how long since it was written to, when it is finished with what is on disk if it stays so. */
const recordingEntry = obj({ name: str, bytesOnDisk: count, bytesSent: count, idleSeconds: count, finishedInSeconds: count });
export type RecordingEntry = ShapeOf<typeof recordingEntry>;

export const uploadsSection = obj({
  files: count,
  bytesLeft: count,
  bytesPerSecond: count,
  /** Only with a media dir. */
  skipped: optional(skippedSection),
  /** The media dir's path while it does not exist (nothing is uploaded from it then); absent when it exists or none is set. */
  mediaDirMissing: optional(str),
  /** Recordings uploading in real time now (docs/uploads.md, "Real-time uploads"); absent when none. */
  recording: optional(listOf(recordingEntry)),
  /** What keeps clips from being taken or uploads from going (upload-blocks.ts); absent when nothing does. A kind this agent does not know (a newer agent's) is left out, the others kept. */
  blocked: optional(keptListOf(uploadBlock)),
});
export type UploadsSection = ShapeOf<typeof uploadsSection>;

declare module '../core/status-document.js' {
  interface StatusSections {
    uploads: UploadsSection;
  }
}
