// The real-time upload suite's camera (e2e/uploads-realtime.test.ts): a
// recorder that writes a clip the way cameras do (NAME.EXT.part at camera
// rate in agent time, sizes patched at the start when it stops, then
// renamed), and the checks of what the fake stored, computed here from the
// service's rules (docs/service-api.md, "Real-time uploads": parts joined in
// number order), never from the agent's code.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { AssetView, FakeCloud } from '../fake-cloud/index.js';
import { storagePuts } from '../support/assets.js';
import type { Rig } from './rig.js';

export const MiB = 1024 * 1024;
export const MIN_PART = 5 * MiB;

export interface Recording {
  /** The working name while it records. */
  part: string;
  /** The finished name. */
  file: string;
  /** Resolves once the file is renamed (the recorder's stop). */
  done: Promise<void>;
  /** Bytes written so far. */
  written(): number;
}

export interface RecorderOptions {
  bytes: number;
  /** Bytes per agent second. */
  rate: number;
  /** Called at these fractions of the clip written (kills, outages), awaited before it goes on. */
  at?: Array<{ fraction: number; run: () => Promise<void> | void }>;
  /** Rewritten at stop, besides the first 4 KiB (a trailer pointer, an index in the middle). */
  patchAlso?: number[];
  /** Called after the patch, just before the rename. */
  beforeRename?: () => Promise<void> | void;
  /** The recording is lost instead of finished (the card pulled): the .part is removed, never renamed. */
  vanish?: boolean;
  /** Written in place under its finished name, no .part and no rename. */
  inPlace?: boolean;
}

/**
 * Writes `bytes` of random data to `<media>/<name>.part` in 1 MiB writes at
 * `rate`, agent time moving by each write's share (the rig's clock: the
 * daemon runs between two writes), then, as a MOV writer does at stop,
 * rewrites its first 4 KiB (and any `patchAlso` offsets) and renames it to
 * `<media>/<name>`.
 */
export function record(rig: Rig, name: string, o: RecorderOptions): Recording {
  const file = join(rig.media, name);
  const part = o.inPlace ? file : join(rig.media, `${name}.part`);
  let written = 0;
  const done = (async () => {
    const fd = openSync(part, 'w');
    try {
      const chunk = MiB;
      const t0 = rig.now();
      const hooks = [...(o.at ?? [])].sort((a, b) => a.fraction - b.fraction);
      while (written < o.bytes) {
        const n = Math.min(chunk, o.bytes - written);
        writeSync(fd, randomBytes(n), 0, n, written);
        written += n;
        while (hooks.length > 0 && written >= hooks[0]!.fraction * o.bytes) await hooks.shift()!.run();
        const due = t0 + Math.round((written / o.rate) * 1000);
        if (due > rig.now()) await rig.runTo(due);
      }
      for (const at of [0, ...(o.patchAlso ?? [])]) writeSync(fd, randomBytes(4096), 0, 4096, at);
    } finally {
      closeSync(fd);
    }
    await o.beforeRename?.();
    if (o.vanish) unlinkSync(part);
    else if (!o.inPlace) renameSync(part, file);
  })();
  return { part, file, done, written: () => written };
}

/** sha256 of bytes [start, end) of a file. */
export function sliceSha(file: string, start: number, end: number): string {
  const fd = openSync(file, 'r');
  try {
    const h = createHash('sha256');
    const buf = Buffer.allocUnsafe(MiB);
    for (let at = start; at < end; ) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, end - at), at);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
      at += n;
    }
    return h.digest('hex');
  } finally {
    closeSync(fd);
  }
}

/** The real-time parts of an asset by number, in number order. */
export const partsByNumber = (a: AssetView): Array<AssetView['parts'][number] & { number: number }> =>
  a.parts.map((p) => ({ ...p, number: Number(p.key.replace(/^rt-/, '')) })).sort((x, y) => x.number - y.number);

/**
 * Problems with a real-time asset against the finished file (empty = the
 * object, its parts joined in number order, is the file byte for byte, and
 * every part but the last is at least 5 MiB).
 */
export function realtimeProblems(a: AssetView, file: string, size: number): string[] {
  const out: string[] = [];
  if (!a.realtime) out.push(`asset ${a.id} is not a real-time asset`);
  if (!a.complete) out.push(`asset ${a.id} incomplete (${a.bytesReceived}/${a.filesize})`);
  if (a.filesize !== size) out.push(`filesize ${a.filesize}, file ${size}`);
  const parts = partsByNumber(a);
  let at = 0;
  parts.forEach((p, i) => {
    const bytes = p.receivedBytes ?? 0;
    if (i < parts.length - 1 && bytes < MIN_PART) out.push(`part ${p.number} is ${bytes} bytes, under 5 MiB, and not the last`);
    if (p.sha256 !== sliceSha(file, at, at + bytes)) out.push(`part ${p.number} differs from bytes ${at}..${at + bytes} of the file`);
    at += bytes;
  });
  if (at !== size) out.push(`the parts hold ${at} bytes, the file ${size}`);
  return out;
}

/** Successful PUTs per part key of an asset. */
export function putsPerPart(cloud: FakeCloud, assetId: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of storagePuts(cloud, assetId)) {
    if (e.status !== 200) continue;
    const key = e.path.split('/').at(-1) ?? '';
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}
