// The bodies a storage PUT can send. A file slice is read through two
// buffers taken from a pool and reused: a stream from fs.createReadStream
// allocates a fresh buffer for every read, which at hundreds of MB/s is
// tens of MB of dead ArrayBuffers waiting for the collector (and a young
// generation that grows to keep up) — the agent's RSS would climb by that
// much during every large upload.
import { promises as fs } from 'node:fs';
import { Transform } from 'node:stream';

/** Bytes per read of a file slice; a PUT holds two, one read into while the other is sent. */
export const SLICE_BUFFER_BYTES = 256 * 1024;

/**
 * Read buffers handed from one PUT to the next, so a steady upload allocates
 * nothing per chunk. A buffer comes back only from a slice that was read to
 * its end, when got has written every byte of it; one given up early may
 * still sit in a dying socket's queue and is left to the collector.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];

  constructor(
    readonly bufferBytes = SLICE_BUFFER_BYTES,
    /** Buffers kept while no PUT runs: two per chunk in flight is what a steady upload asks for. */
    private readonly keep = 8,
  ) {}

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.bufferBytes);
  }

  give(buffers: readonly Buffer[]): void {
    for (const b of buffers) if (this.free.length < this.keep && b.length === this.bufferBytes) this.free.push(b);
  }

  get size(): number {
    return this.free.length;
  }
}

/** `length` bytes of `file` from `start` (the length is the PUT's). */
export interface FileSlice {
  file: string;
  start: number;
}

export const isFileSlice = (body: unknown): body is FileSlice =>
  typeof body === 'object' && body !== null && typeof (body as FileSlice).file === 'string' && typeof (body as FileSlice).start === 'number' &&
  typeof (body as { pipe?: unknown }).pipe !== 'function';

/** Why reading a slice failed, as opposed to the network failing. */
export class SliceReadError extends Error {}

/**
 * Yields bytes [start, start + length) of the file. A yielded buffer is
 * overwritten once the next one is asked for, so the consumer must be done
 * with it by then: got writes each one to the request and waits for the
 * write's callback (the bytes are in the socket) before it asks again.
 * The file is closed when the slice ends, fails or is returned early.
 */
export async function* readFileSlice(slice: FileSlice, length: number, pool: BufferPool): AsyncGenerator<Buffer, void, undefined> {
  if (length <= 0) return;
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(slice.file, 'r');
  } catch (err) {
    throw new SliceReadError(`reading the chunk failed (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const buffers = [pool.take(), pool.take()] as const;
  let whole = false;
  const fill = async (buffer: Buffer, at: number): Promise<Buffer> => {
    const want = Math.min(buffer.length, length - at);
    for (let got = 0; got < want; ) {
      let n: number;
      try {
        ({ bytesRead: n } = await handle.read(buffer, got, want - got, slice.start + at + got));
      } catch (err) {
        throw new SliceReadError(`reading the chunk failed (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      if (n === 0) throw new SliceReadError(`the body ended after ${at + got} of the ${length} bytes declared (the file shrank)`);
      got += n;
    }
    return want === buffer.length ? buffer : buffer.subarray(0, want);
  };
  let pending: Promise<Buffer> | undefined = fill(buffers[0], 0);
  try {
    for (let at = 0, next = 1; pending !== undefined; next ^= 1) {
      const ready: Buffer = await pending;
      pending = undefined;
      at += ready.length;
      // The other buffer's bytes were consumed: the consumer asked for this one.
      if (at < length) {
        pending = fill(buffers[next], at);
        pending.catch(() => undefined); // awaited on the next turn, or in finally when returned early
      }
      yield ready;
    }
    whole = true;
  } finally {
    await pending?.catch(() => undefined);
    if (whole) pool.give(buffers);
    await handle.close();
  }
}

/** Passes a stream body through unchanged, failing it when it is not exactly `length` bytes. */
export function exactLength(length: number, onMismatch: (message: string) => void): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen <= length) return done(null, chunk);
      onMismatch(`the body is longer than the ${length} bytes declared`);
      done(new Error('body longer than declared'));
    },
    flush(done) {
      if (seen === length) return done();
      onMismatch(`the body ended after ${seen} of the ${length} bytes declared`);
      done(new Error('body shorter than declared'));
    },
  });
}
