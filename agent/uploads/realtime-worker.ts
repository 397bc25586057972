// One real-time upload, run from the outbox while the camera records
// (docs/uploads.md, "Real-time uploads"): the asset is created with
// `is_realtime_upload: true` and no size, then each part is sent as soon as
// the file holds it, and the final part, with `asset_filesize`, once the
// recording is finished. The run lasts as long as the recording; it looks at
// the file every REALTIME_LOOK_MS through a descriptor opened once, which a
// rename (`NAME.EXT.part` to `NAME.EXT`) does not disturb.
//
// Part n is bytes [(n-1)·P, n·P) (realtime-item.ts). It goes once the file is
// longer than n·P, never at exactly n·P: the part that reaches the end of the
// finished file is the final one, so no full part has to go twice because
// the recording happened to stop on a part boundary. Part 1 waits for the
// finish: MOV/MP4 and WAV writers rewrite sizes in their first bytes when they
// stop. Each part is hashed as it streams; at the finish every part sent is
// hashed again from the file and any that differs goes again under its
// number (storage keeps the last PUT of a number), then part 1, then the
// final part, which completes the asset: the stored object is the finished
// file, byte for byte, whatever the recorder rewrote. Every byte is read
// from the descriptor opened and checked at the start of the attempt (a
// regular file, one name, inside its root: version-check.ts openForUpload),
// never by the path.
//
// Every part sent is a progress record (flushed before the next part), so a
// kill, a power cut or an outage resumes without sending a recorded part
// again. The recording is finished when its `.part` name is gone and the
// finished name holds the same inode; a clip written in place, once it has
// not changed for the settle time; any clip, once nothing was written to it
// for REALTIME_STALL_MS (a recorder that died: what is on disk is uploaded,
// not left to expire). A `.part` that disappears without becoming its
// finished name ends the item with that reason; nothing waits on it. A
// cancel that comes once the final part's last bytes are on their way
// cannot take them back (last-part.ts).
import { formatBytes } from '../lib/byte-size.js';
import { promises as fs } from 'node:fs';
import type { AssetEndpoints, RealtimePart } from '../api/assets.js';
import { MAX_UPLOAD_PARTS } from '../api/assets.js';
import type { StorageClient } from '../api/storage.js';
import type { Clock } from '../lib/clock.js';
import { AgentError } from '../lib/errors.js';
import { fsCode, fsError } from '../lib/fs-errors.js';
import type { Logger } from '../lib/logger.js';
import { quote } from '../lib/text.js';
import { REALTIME_LOOK_MS, REALTIME_STALL_MS } from '../lib/timing.js';
import type { Worker } from '../outbox/dispatcher.js';
import { classify, type Outcome } from '../outbox/outcome.js';
import type { OutboxItem } from '../outbox/types.js';
import { PAUSED_REFUSED, type FileIdentity } from './upload-item.js';
import type { LastParts } from './last-part.js';
import type { UploadRoots } from './upload-paths.js';
import { NotRegular, NotTaken, nodeUploadFiles, openForUpload, type FileFacts, type OpenFile } from './version-check.js';
import type { RecordingIdentity } from './uploaded-index.js';
import { writeUploadRequest } from './upload-request.js';
import { finishUpload } from './finish-upload.js';
import { CancelledFirst, TEMPORARY_OPEN_ERRORS, UPLOAD_LIFETIME_MS, cancelledFirst, completedDespiteCancel } from './upload-worker.js';
import { PART_HASH, partHasher, type PartHasher } from './part-hash.js';
import { REALTIME_KIND, REALTIME_PART_BYTES, realtimeProgressOf, recordingOnDisk, type RealtimePayload, type RealtimeProgress } from './realtime-item.js';

export interface RealtimeWorkerDeps {
  assets: Pick<AssetEndpoints, 'createRealtime' | 'realtimeParts'>;
  storage: Pick<StorageClient, 'put'>;
  outbox: { progress(id: string, data: unknown): Promise<void>; flush(): Promise<void> };
  clock: Clock;
  /** The service's clock now (local wall time corrected by the last Date header). */
  serverNow: () => number;
  channelId: (key: string) => Promise<string | undefined>;
  /** uploaded-index.ts: the finished file once it went; a recording the paused service refused (never queued again). */
  index: { has(f: FileIdentity): boolean; add(f: FileIdentity): Promise<void>; addRecording(r: RecordingIdentity): Promise<void> };
  deleteAfterUpload: boolean;
  /** Agent ms a clip written in place must hold still to be finished (mediaSettleSeconds). */
  settleMs: number;
  /** The queue dir: a recording that cannot go in real time is handed back there for a whole-file upload. */
  queueDir?: string;
  windowOpen?: () => boolean;
  onBytes?: (n: number) => void;
  /** Something `recordings()` shows changed (the status document should be written again). */
  onChange?: () => void;
  /** Part size (tests use smaller parts against a fake with a smaller floor); default REALTIME_PART_BYTES. */
  partBytes?: number;
  /** The media dir and the upload roots: the recording must lie inside its root when it is opened (upload-paths.ts). Absent: not checked (unit tests). */
  roots?: UploadRoots;
  /** Where a cancel meets the moment the final part's last bytes go (shared with the uploads unit). */
  lastParts?: LastParts;
  logger?: Logger;
}

/** A recording being uploaded, as the status document shows it. */
export interface RecordingView {
  name: string;
  /** Bytes on disk at the last look. */
  bytesOnDisk: number;
  /** Bytes of the parts at storage. */
  bytesSent: number;
  /** Agent seconds since the file last changed. */
  idleSeconds: number;
  /** Agent seconds until it is finished with what is on disk if nothing more is written. */
  finishedInSeconds: number;
}

interface Live {
  name: string;
  size: number;
  sent: number;
  changedAt: number;
  /** A part was recorded in this run. */
  progressed: boolean;
}

/** Why a run ends before the upload is done. */
class Stop extends Error {
  constructor(readonly outcome: Outcome) {
    super('stop');
  }
}

/** The recording cannot go on as a real-time upload (the file shrank, too many parts): it goes as a whole file once finished. */
class HandBack extends Error {}

/** The hasher of the progress record's kind; the caller made sure this Node has it (upload()). */
const hasherOf = (prog: RealtimeProgress): PartHasher => partHasher(prog.hash) as PartHasher;

/** Where the recording is now. */
type Place = { at: 'recording' } | { at: 'finished' } | { at: 'gone'; why: string };

export class RealtimeWorker implements Worker {
  readonly kind = REALTIME_KIND;
  private readonly live = new Map<string, Live>();

  constructor(private readonly d: RealtimeWorkerDeps) {}

  ready(): boolean {
    return this.d.windowOpen?.() ?? true;
  }

  /** The recordings uploading now. */
  recordings(): RecordingView[] {
    const now = this.d.clock.now();
    return [...this.live.values()].map((l) => {
      const idle = Math.max(0, now - l.changedAt);
      return { name: l.name, bytesOnDisk: l.size, bytesSent: l.sent, idleSeconds: Math.round(idle / 1000), finishedInSeconds: Math.round(Math.max(0, REALTIME_STALL_MS - idle) / 1000) };
    });
  }

  async run(item: OutboxItem, signal: AbortSignal): Promise<Outcome> {
    const p = item.payload as RealtimePayload;
    const prog = realtimeProgressOf(item.progress);
    // Its final part went before a crash: only the index and the clean-up are left.
    if (prog?.final) return this.finished(p, prog, prog.final);
    let fh: OpenFile;
    try {
      fh = await this.open(p);
    } catch (err) {
      if (err instanceof Stop) return err.outcome;
      return classify(err);
    }
    this.live.set(item.id, { name: p.name, size: 0, sent: 0, changedAt: this.d.clock.now(), progressed: false });
    let out: Outcome;
    let late = false;
    try {
      out = await this.upload(item, p, prog, fh, signal);
    } catch (err) {
      out = await this.failed(err, p, prog, signal);
      // A recording lasts long: failures between parts recorded are not failures in a row (the dispatcher's MAX_ATTEMPTS).
      if (out.result === 'retry' && this.live.get(item.id)?.progressed === true) out = { ...out, progressed: true };
    } finally {
      late = this.d.lastParts?.release(item.id) ?? false;
      this.live.delete(item.id);
      this.d.onChange?.();
      await fh.close().catch(() => undefined);
    }
    return late && out.result === 'done' ? completedDespiteCancel() : out;
  }

  /** What a run that threw ends with. */
  private async failed(err: unknown, p: RealtimePayload, prog: RealtimeProgress | undefined, signal: AbortSignal): Promise<Outcome> {
    if (err instanceof CancelledFirst) return cancelledFirst();
    // Stopped from outside (the daemon stopping, a cancel): whatever the stop broke is not the upload's fault.
    if (signal.aborted) return { result: 'retry', error: new AgentError('timeout', `the real-time upload of ${quote(p.name)} was stopped; it goes on at the next attempt`) };
    if (err instanceof Stop) return err.outcome;
    if (err instanceof HandBack) return this.handBack(p, prog, err.message);
    if (err instanceof AgentError && err.kind === 'paused') {
      // Never retried, by a later run either: the index keeps the recording, so its finished file is not queued
      // once the queue has reclaimed this item (a failed write is still remembered until the next one).
      await this.d.index.addRecording({ ino: p.ino, finalPath: p.finalPath, ...(await recordingOnDisk(p)) }).catch((e: unknown) => this.d.logger?.warn({ name: p.name, err: String(e) }, 'cannot record a refused recording in the index; its finished file may be offered again after a restart'));
      return { result: 'dead', reason: `${PAUSED_REFUSED}: ${err.message} (the recording ${quote(p.name)} is not uploaded)` };
    }
    return classify(err);
  }

  /**
   * Opens the recording where it is: its working name, else its finished
   * name when that holds the same inode. Checked before a byte is read
   * (openForUpload): a file with a second name (a hard link to
   * credentials.json named `x.mp4.part`) or one outside its root ends the item.
   */
  private async open(p: RealtimePayload): Promise<OpenFile> {
    for (const file of p.path === p.finalPath ? [p.path] : [p.path, p.finalPath]) {
      let fh: OpenFile;
      let st: FileFacts;
      try {
        ({ file: fh, st } = await openForUpload(file, nodeUploadFiles, this.d.roots));
      } catch (err) {
        if (err instanceof NotTaken) throw new Stop({ result: 'dead', reason: `the recording ${quote(file)} is not uploaded: ${err.why}` });
        // Something else at its name (a FIFO, a folder): not the recording.
        if (err instanceof NotRegular) continue;
        const code = fsCode(err);
        if (code === 'ENOENT' || code === 'ENOTDIR') continue;
        // Short of descriptors for a moment: tried again, with the file system's own kind (disk), not called a network failure.
        if (TEMPORARY_OPEN_ERRORS.has(code ?? '')) throw new Stop({ result: 'retry', error: fsError(err, 'open the recording', file) });
        throw new Stop({ result: 'dead', reason: fsError(err, 'read the recording', file).message });
      }
      if (st.ino === p.ino && st.dev === p.dev) return fh;
      await fh.close();
    }
    throw new Stop({ result: 'dead', reason: `the recording is gone: ${p.path} no longer exists and ${p.finalPath} is not the same file; nothing more of it is uploaded` });
  }

  private async place(p: RealtimePayload): Promise<Place> {
    const same = async (file: string): Promise<boolean | 'absent'> => {
      try {
        const st = await fs.stat(file);
        return st.ino === p.ino && st.dev === p.dev;
      } catch {
        return 'absent';
      }
    };
    if (p.path === p.finalPath) return (await same(p.path)) === true ? { at: 'recording' } : { at: 'gone', why: `${p.path} was removed or replaced while it was recorded` };
    if ((await same(p.path)) === true) return { at: 'recording' };
    if ((await same(p.finalPath)) === true) return { at: 'finished' };
    return { at: 'gone', why: `${p.path} disappeared without becoming ${p.finalPath} (removed, renamed elsewhere, or the card was pulled)` };
  }

  private async upload(item: OutboxItem, p: RealtimePayload, found: RealtimeProgress | undefined, fh: OpenFile, signal: AbortSignal): Promise<Outcome> {
    const partBytes = this.d.partBytes ?? REALTIME_PART_BYTES;
    let prog = found;
    // A record this agent cannot go on from (expired, cut differently, hashed in a way this Node cannot) starts a new asset.
    if (prog !== undefined && (prog.partBytes !== partBytes || this.d.serverNow() - prog.createdAt > UPLOAD_LIFETIME_MS || partHasher(prog.hash) === undefined)) {
      this.d.logger?.info({ name: p.name, asset: prog.assetId }, 'real-time upload: the asset expired, or its parts were cut or hashed otherwise; starting a new one');
      prog = undefined;
    }
    prog ??= await this.create(item.id, p, partBytes, signal);
    const live = this.live.get(item.id) as Live;
    const state = { prog, hashes: [...prog.sent] };
    live.sent = state.hashes.filter((h) => h !== '').length * partBytes;
    let sig = '';
    for (;;) {
      signal.throwIfAborted();
      const st = await fh.stat();
      const now = this.d.clock.now();
      const s = `${st.size}:${st.mtimeMs}`;
      if (s !== sig) {
        sig = s;
        live.changedAt = now;
        live.size = st.size;
        this.d.onChange?.();
      }
      // Every full part the file has grown past, part 1 excepted.
      for (let n = 2; n * partBytes < st.size; n++) {
        if (state.hashes[n - 1]) continue;
        if (n >= MAX_UPLOAD_PARTS) throw new HandBack(`it outgrew the ${MAX_UPLOAD_PARTS} parts of ${formatBytes(partBytes)} a real-time upload can have`);
        await this.sendPart(item.id, p, state, fh, { number: n, size: partBytes }, st.size, signal);
        live.sent += partBytes;
      }
      const where = await this.place(p);
      if (where.at === 'gone') {
        this.d.logger?.warn({ name: p.name, asset: state.prog.assetId }, `real-time upload ended: ${where.why}`);
        throw new Stop({ result: 'dead', reason: `the recording is gone: ${where.why}; asset ${state.prog.assetId} is left unfinished (the service drops it after 24 h)` });
      }
      const idle = now - live.changedAt;
      // In place: unchanged for the settle time, and seen unchanged by one look at least (a settle time of 0 must not finish a clip mid-write).
      const finished = where.at === 'finished' || (p.path === p.finalPath && idle >= this.d.settleMs && idle > 0);
      if (finished || idle >= REALTIME_STALL_MS) {
        if (!finished) this.d.logger?.warn({ name: p.name, idleSeconds: Math.round(idle / 1000) }, `real-time upload: nothing written to ${quote(p.name)} for ${Math.round(idle / 60_000)} min; finishing it with what is on disk`);
        const end = await this.finish(item.id, p, state, fh, st, signal);
        if (end !== undefined) return end;
        continue; // written to while it was being finished: not finished after all
      }
      await this.pause(REALTIME_LOOK_MS, signal);
    }
  }

  private async create(id: string, p: RealtimePayload, partBytes: number, signal: AbortSignal): Promise<RealtimeProgress> {
    const channel = p.channelKey === undefined ? undefined : await this.d.channelId(p.channelKey);
    const offset = Math.max(0, Math.round((this.d.clock.wallNow() - p.mtimeMs) / 1000));
    const asset = (
      await this.d.assets.createRealtime(
        { name: p.name, filetype: p.filetype, offset, ...(channel !== undefined && { channel }), ...(p.extension !== undefined && { extension: p.extension }) },
        signal,
      )
    ).value;
    const prog: RealtimeProgress = { assetId: asset.id, createdAt: this.d.serverNow(), partBytes, hash: PART_HASH, sent: [], seen: 0 };
    // On flash before any part goes: a part sent to an asset the next run does not know of is a part sent twice.
    await Promise.all([this.d.outbox.progress(id, prog), this.d.outbox.flush()]);
    this.d.logger?.info({ name: p.name, asset: asset.id }, 'real-time upload started');
    return prog;
  }

  /**
   * Asks for the part's URL and streams it from the open file, hashing what
   * goes; then records the hash (flushed) before the next part. A final part
   * carries the file's size, and its last buffer goes only when no cancel
   * came first (last-part.ts).
   */
  private async sendPart(id: string, p: RealtimePayload, state: { prog: RealtimeProgress; hashes: string[] }, fh: OpenFile, part: RealtimePart, seen: number, signal: AbortSignal, final?: RealtimeProgress['final']): Promise<void> {
    const url = (await this.d.assets.realtimeParts(state.prog.assetId, [part], final?.size, signal)).value[0] as string;
    const hash = hasherOf(state.prog);
    const start = (part.number - 1) * state.prog.partBytes;
    // Storage's answer to the final part, for a cancel that comes once its last bytes are on their way.
    let answered: (took: boolean) => void = () => undefined;
    const answer = new Promise<boolean>((resolve) => (answered = resolve));
    let read = 0;
    let refused = false;
    const onRead = (b: Buffer): void => {
      hash.update(b);
      read += b.length;
      // The buffer that completes the asset: a throw here ends the body short, and storage keeps no part.
      if (final === undefined || read < part.size) return;
      signal.throwIfAborted();
      refused = this.d.lastParts?.seal(id, answer) === false;
      if (refused) throw new CancelledFirst();
    };
    // The descriptor opened and checked at the start, never the path.
    const body = part.size === 0 ? Buffer.alloc(0) : { fd: fh.fd, start, onRead };
    try {
      await this.d.storage.put({ url, body, length: part.size, contentType: p.filetype, signal });
      answered(true);
    } catch (err) {
      answered(false);
      throw refused ? new CancelledFirst() : err;
    }
    this.d.onBytes?.(part.size);
    state.hashes[part.number - 1] = hash.digest();
    const hashes = Array.from(state.hashes, (h) => h ?? '');
    // A final part's record says the asset is complete, in the same record as its hash.
    state.prog = { ...state.prog, sent: hashes, seen, ...(final !== undefined && { final }) };
    await Promise.all([this.d.outbox.progress(id, state.prog), this.d.outbox.flush()]);
    const live = this.live.get(id);
    if (live !== undefined) live.progressed = true;
  }

  /** The hash of bytes [start, start + length) as the file holds them now. */
  private async hashNow(prog: RealtimeProgress, fh: OpenFile, start: number, length: number, buf: Buffer): Promise<string> {
    const hash = hasherOf(prog);
    for (let at = 0; at < length; ) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, length - at), start + at);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      at += bytesRead;
    }
    return hash.digest();
  }

  /**
   * The recording is finished at `st`: the full parts not sent yet, every
   * part sent checked against the file and sent again where it differs,
   * part 1, then the final part. Undefined when the file changed meanwhile
   * (the caller goes on watching it).
   */
  private async finish(id: string, p: RealtimePayload, state: { prog: RealtimeProgress; hashes: string[] }, fh: OpenFile, st: FileFacts, signal: AbortSignal): Promise<Outcome | undefined> {
    const P = state.prog.partBytes;
    const size = st.size;
    if (size === 0) throw new Stop({ result: 'dead', reason: `the recording ${quote(p.name)} ended empty (0 bytes): nothing to upload` });
    const last = Math.ceil(size / P);
    if (last > MAX_UPLOAD_PARTS) throw new HandBack(`it has more than the ${MAX_UPLOAD_PARTS} parts of ${formatBytes(P)} a real-time upload can have`);
    if (state.hashes.some((h, i) => h !== '' && h !== undefined && i + 1 >= last)) throw new HandBack(`it shrank below parts already sent (now ${size} bytes)`);
    // Part 1 goes (unless a run before this one sent it as it is now) while the parts sent during the
    // recording are hashed again from the file: a rewritten one goes again, under its number.
    const sendFirst = async (): Promise<void> => {
      if (last === 1) return;
      if (state.hashes[0] && (await this.hashNow(state.prog, fh, 0, P, Buffer.allocUnsafe(256 * 1024))) === state.hashes[0]) return;
      await this.sendPart(id, p, state, fh, { number: 1, size: P }, size, signal);
    };
    const changed = async (): Promise<number[]> => {
      // 1 MiB reads: a quarter of the reads of 256 KiB, about a fifth less time per GB hashed.
      const buf = Buffer.allocUnsafe(1024 * 1024);
      const out: number[] = [];
      for (let n = 2; n < last; n++) {
        const sent = state.hashes[n - 1];
        if (!sent || (await this.hashNow(state.prog, fh, (n - 1) * P, P, buf)) !== sent) out.push(n);
      }
      return out;
    };
    const [, resend] = await Promise.all([sendFirst(), changed()]);
    const rewritten = resend.filter((n) => state.hashes[n - 1]);
    if (rewritten.length > 0) this.d.logger?.info({ name: p.name, parts: rewritten }, 'real-time upload: parts rewritten since they were sent go again');
    for (const n of resend) await this.sendPart(id, p, state, fh, { number: n, size: P }, size, signal);
    // Nothing may have changed since the finish began: the final part completes the asset.
    const now = await fh.stat();
    if (now.size !== st.size || now.mtimeMs !== st.mtimeMs) return undefined;
    const final = { size, mtimeMs: st.mtimeMs };
    await this.sendPart(id, p, state, fh, { number: last, size: size - (last - 1) * P, final: true }, size, signal, final);
    return this.finished(p, state.prog, final);
  }

  /**
   * The final part is at storage: the finished file goes into the index (the media watcher will report it), and is
   * deleted if so set (finish-upload.ts). Its inode change time is not compared: the rename that ends a recording
   * changes it, and after a crash only the size and modification time are on record.
   */
  private finished(p: RealtimePayload, prog: RealtimeProgress, final: { size: number; mtimeMs: number }): Promise<Outcome> {
    const identity: FileIdentity = { dev: p.dev, ino: p.ino, size: final.size, mtimeMs: final.mtimeMs };
    return finishUpload(this.d, { record: identity, path: p.finalPath, went: identity, name: p.name, bytes: final.size, assetId: prog.assetId, what: 'real-time upload' });
  }

  /** The recording cannot finish as a real-time upload: it is handed back to go whole, as a new asset, once it holds still. */
  private async handBack(p: RealtimePayload, prog: RealtimeProgress | undefined, why: string): Promise<Outcome> {
    this.d.logger?.warn({ name: p.name, asset: prog?.assetId, why }, `real-time upload stopped: ${quote(p.name)} ${why}; it goes as a whole file once finished`);
    if (this.d.queueDir !== undefined) {
      let st;
      try {
        st = await fs.stat(p.finalPath).catch(() => fs.stat(p.path));
        await writeUploadRequest(this.d.queueDir, [{ path: st.ino === p.ino ? p.finalPath : p.path, name: p.name, filetype: p.filetype, ...(p.extension !== undefined && { extension: p.extension }), ...(p.channelKey !== undefined && { channelKey: p.channelKey }), ino: st.ino, dev: st.dev, size: st.size, mtimeMs: st.mtimeMs }], { settle: true });
      } catch (err) {
        this.d.logger?.warn({ name: p.name, err: String(err) }, 'cannot hand the recording back for a whole-file upload');
      }
    }
    return { result: 'dead', reason: `the recording ${why}: not uploaded in real time; it goes as a whole file once finished` };
  }

  /** Agent ms on the clock, cut short by the signal. */
  private pause(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        timer.cancel();
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      const timer = this.d.clock.setTimer(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
