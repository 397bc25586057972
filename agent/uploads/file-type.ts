// The MIME type an asset is created with. It is signed into every part's
// upload URL (storage refuses a PUT whose Content-Type differs), so it is
// decided once, from the name, and never from the bytes: a file still being
// written could be sniffed as something else later.
import path from 'node:path';
import { lookup } from 'mrmime';

/** What the service accepts for a type nobody knows (camera raw formats, sidecars). */
export const FALLBACK_FILETYPE = 'application/octet-stream';

export interface FileType {
  filetype: string;
  /** '.ext' as written in the name (the service wants the dot); absent when the name has none. */
  extension?: string;
}

export function fileTypeOf(name: string): FileType {
  // extname, not mrmime's own split: that would read a file called "mp4" as video/mp4.
  const ext = path.extname(path.basename(name));
  if (ext.length < 2) return { filetype: FALLBACK_FILETYPE };
  return { filetype: lookup(ext.slice(1)) ?? FALLBACK_FILETYPE, extension: ext };
}
