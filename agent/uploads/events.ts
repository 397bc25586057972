// What the uploads feature publishes on the bus and on GET /v1/events,
// declared here (merged into core's AgentEvents and EventLines) so core names
// none of it.
import type { UploadRow } from './upload-rows.js';

/** A media file that held still and may be uploaded (upload-item.ts's UploadPayload has this shape). */
export interface MediaFileFacts {
  path: string;
  name: string;
  size: number;
  mtimeMs: number;
  ino: number;
  dev: number;
  filetype: string;
  extension?: string;
  /** The profile channel key (the sub-folder it came from). */
  channelKey?: string;
}

/** An `upload` line: an upload's state changed (progress at most once a second); `reason` when it went backwards or ended badly. */
export type UploadLine = Pick<UploadRow, 'id' | 'name' | 'state' | 'bytesDone' | 'bytesTotal' | 'priority'> & { reason?: string };

declare module '../core/event-bus.js' {
  interface AgentEvents {
    /** The media watcher found a finished file. */
    mediaFileReady: { file: MediaFileFacts };
    /** Real-time uploads: the media watcher found a clip still being written at `path`, to be `finalPath` once finished. */
    mediaFileGrowing: { file: MediaFileFacts & { finalPath: string } };
    /** Bytes of a media file left for storage. */
    bytesSent: { bytes: number };
    /** The upload window opened: uploads may go now. */
    uploadWindowOpened: Record<string, never>;
  }
}

declare module '../core/event-lines.js' {
  interface EventLines {
    upload: UploadLine;
  }
}
