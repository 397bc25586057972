// What the fake cloud stored, checked against the files' bytes: assets by
// name, storage PUTs, bytes received, per-part sha256 against the file's own
// byte ranges (computed here from the service's rule, docs/service-api.md
// "Uploads", never by the agent's code), filetypes by extension. For the
// upload suites of both kinds: the daemon in-process (test/e2e/) and the
// bundle as a process (test/integration/uploads-harness.ts re-exports it).
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import type { AssetView, FakeCloud, JournalEntry } from '../fake-cloud/index.js';

export const PART = 256 * 1024;
export const STORAGE = '/_storage/';
export const ASSETS_PATH = '/v2/devices/assets';

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** The service's split (docs/service-api.md, "Uploads"): n parts, chunk = ceil(size / n), the last to EOF; the hash of each range. */
export function expectedParts(data: Buffer, n: number): Array<{ bytes: number; sha256: string }> {
  const chunk = Math.ceil(data.length / n);
  return Array.from({ length: n }, (_, i) => {
    const start = Math.min(data.length, i * chunk);
    const end = Math.min(data.length, start + chunk);
    return { bytes: end - start, sha256: sha256(data.subarray(start, end)) };
  });
}

/** The fake's own part count for a size: ceil(size / part), at least 1. */
export const partsFor = (size: number, part = PART): number => Math.max(1, Math.ceil(size / part));

export const assetsNamed = (cloud: FakeCloud, name: string): AssetView[] => cloud.assets().filter((a) => a.name === name);
export const completeNamed = (cloud: FakeCloud, name: string): AssetView[] => assetsNamed(cloud, name).filter((a) => a.complete);

/** Problems with `name` at the fake (empty = exactly one complete asset, byte-identical per part, of `filetype`). */
export function storedProblems(cloud: FakeCloud, name: string, data: Buffer, filetype?: string): string[] {
  const done = completeNamed(cloud, name);
  if (done.length !== 1) return [`${name}: ${done.length} complete assets (${assetsNamed(cloud, name).length} in all)`];
  return assetProblems(done[0]!, data, filetype);
}

/** Problems with one asset against the file's bytes (empty = complete and byte-identical part by part). */
export function assetProblems(a: AssetView, data: Buffer, filetype?: string): string[] {
  const name = a.name;
  const out: string[] = [];
  if (!a.complete) out.push(`${name}: asset ${a.id} incomplete (${a.bytesReceived}/${a.filesize})`);
  if (a.filesize !== data.length) out.push(`${name}: filesize ${a.filesize}, file ${data.length}`);
  if (filetype !== undefined && a.filetype !== filetype) out.push(`${name}: filetype ${a.filetype}, expected ${filetype}`);
  const want = expectedParts(data, a.parts.length);
  a.parts.forEach((p, i) => {
    if (p.receivedBytes !== want[i]!.bytes || p.sha256 !== want[i]!.sha256) out.push(`${name}: part ${p.key} differs from bytes ${i} of ${a.parts.length}`);
  });
  if (a.parts.length !== partsFor(data.length)) out.push(`${name}: ${a.parts.length} parts, expected ${partsFor(data.length)}`);
  return out;
}

/** Storage requests in the journal, optionally of one asset. */
export function storagePuts(cloud: FakeCloud, assetId?: string): JournalEntry[] {
  const prefix = assetId === undefined ? STORAGE : `${STORAGE}${assetId}/`;
  return cloud.journal.filter((e) => e.path.startsWith(prefix));
}

/** Body bytes the fake read over every PUT to the asset's URLs (re-sends included). */
export const bytesReceived = (cloud: FakeCloud, assetId: string): number => storagePuts(cloud, assetId).reduce((n, e) => n + (e.bodyBytes ?? 0), 0);

export const assetCreates = (cloud: FakeCloud): JournalEntry[] => cloud.journal.filter((e) => e.method === 'POST' && e.path === ASSETS_PATH);

/** Filetypes by extension, from the IANA registry (what the agent must send, decided here on our own). */
export const TYPES: Record<string, string> = {
  '.mp4': 'video/mp4',
  '.mov': 'video/quicktime',
  '.jpg': 'image/jpeg',
  '.txt': 'text/plain',
  '.wav': 'audio/wav',
  '.mxf': 'application/mxf',
  '.r3d': 'application/octet-stream',
  '': 'application/octet-stream',
};
export const typeOf = (file: string): string => {
  const m = /(\.[^.]+)$/.exec(basename(file));
  return TYPES[m?.[1]?.toLowerCase() ?? ''] ?? 'application/octet-stream';
};

/** One line per unfinished upload, for failure messages. */
export function describeAssets(cloud: FakeCloud): string {
  return cloud
    .assets()
    .map((a) => `${a.name} ${a.complete ? 'complete' : 'incomplete'} ${a.bytesReceived}/${a.filesize} parts ${a.parts.filter((p) => p.receivedBytes !== undefined).length}/${a.parts.length}`)
    .join('\n');
}
