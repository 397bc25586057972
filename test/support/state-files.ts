// What the agent leaves on flash, read by the test's own code: the outbox's
// segment files parsed from the format alone (length, CRC-32, JSON body), so
// what a test counts does not come from the agent's own parser; the
// quarantine, temp files, a dir's bytes and a snapshot of its contents. For
// the suites of both kinds: the daemon in-process (test/e2e/) and the bundle
// as a process (test/integration/channels-harness.ts re-exports it).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface DiskRecord {
  t: string;
  id?: string;
  k?: string;
  r?: string;
  g?: string;
}

export interface SegmentScan {
  name: string;
  bytes: number;
  records: DiskRecord[];
  /** Bytes after the last good record: a torn tail (or rot, in an older segment). */
  tail: number;
}

const SEGMENT = /^seg-(\d{6,})\.log$/;

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE, reflected), as the segment format specifies. */
function crc32(data: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of data) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** Every segment in `<state-dir>/queue`, oldest first, parsed record by record until the first bad one. */
export function scanQueueDir(queueDir: string): SegmentScan[] {
  if (!existsSync(queueDir)) return [];
  const names = readdirSync(queueDir)
    .filter((n) => SEGMENT.test(n))
    .sort((a, b) => Number(SEGMENT.exec(a)![1]) - Number(SEGMENT.exec(b)![1]));
  const out: SegmentScan[] = [];
  for (const name of names) {
    let buf: Buffer;
    try {
      buf = readFileSync(join(queueDir, name));
    } catch {
      continue; // deleted meanwhile (only while a daemon runs)
    }
    const records: DiskRecord[] = [];
    let off = 0;
    while (off + 8 <= buf.length) {
      const len = buf.readUInt32LE(off);
      const crc = buf.readUInt32LE(off + 4);
      if (len === 0 || off + 8 + len > buf.length) break;
      const body = buf.subarray(off + 8, off + 8 + len);
      if (crc32(body) !== crc) break;
      let rec: DiskRecord;
      try {
        rec = JSON.parse(body.toString('utf8')) as DiskRecord;
      } catch {
        break;
      }
      records.push(rec);
      off += 8 + len;
    }
    out.push({ name, bytes: buf.length, records, tail: buf.length - off });
  }
  return out;
}

/** Files in `<state-dir>/queue/quarantine`. */
export function quarantined(queueDir: string): string[] {
  const q = join(queueDir, 'quarantine');
  return existsSync(q) ? readdirSync(q) : [];
}

/** Every file under `dir` whose name says temp file (`.tmp` anywhere: ours `.x.<hex>.tmp`, conf's `x.tmp-<digits>`). */
export function tempFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(join(d, e.name), r);
      else if (e.name.includes('.tmp')) out.push(r);
    }
  };
  walk(dir, '');
  return out;
}

/** Total bytes of the regular files under `dir`. */
export function dirBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return n;
}

/** Every entry under `dir` with size, mtime and a hash of its bytes: what a write to the SD card would change. */
export function contentSnapshot(dir: string): Record<string, { size: number; mtimeMs: number; sha256?: string }> {
  const out: Record<string, { size: number; mtimeMs: number; sha256?: string }> = {};
  const walk = (d: string, rel: string): void => {
    const st = statSync(d);
    if (st.isDirectory()) {
      out[rel || '.'] = { size: 0, mtimeMs: st.mtimeMs };
      for (const e of readdirSync(d).sort()) walk(join(d, e), rel ? `${rel}/${e}` : e);
    } else {
      out[rel] = { size: st.size, mtimeMs: st.mtimeMs, sha256: createHash('sha256').update(readFileSync(d)).digest('hex') };
    }
  };
  walk(dir, '');
  return out;
}

/** Every channel sync put in `<state-dir>/queue` has its end record there (and there is at least one put). */
export function syncsEnded(stateDir: string): boolean {
  const records = scanQueueDir(join(stateDir, 'queue')).flatMap((s) => s.records);
  const ended = new Set(records.filter((r) => r.t === 'done' || r.t === 'dead' || r.t === 'drop').map((r) => r.id));
  const puts = records.filter((r) => r.t === 'put');
  return puts.length > 0 && puts.every((r) => ended.has(r.id));
}
