// The bodies a storage PUT can send. A file slice is read from a descriptor
// the caller opened and checked, never from a path: a path is looked up
// again at every open, and a folder on its way swapped between the caller's
// checks and the open would send another file's bytes (credentials.json
// behind a link) under the clip's name. It is read through a buffer taken
// from a pool and reused: a stream from fs.createReadStream
// allocates a fresh buffer for every read, which at hundreds of MB/s is
// tens of MB of dead ArrayBuffers waiting for the collector (and a young
// generation that grows to keep up) — the agent's RSS would climb by that
// much during every large upload.
import fs from 'node:fs';
import { Transform } from 'node:stream';

/**
 * Bytes per read of a file slice; a PUT holds one. It is also the size of
 * each write to the socket, and over TLS each write is encrypted whole into
 * a buffer of the connection's that is kept while the connection lives: at
 * 512 KiB that was about 0.5 MiB per connection, and the upload's peak was
 * 6.6 to 11.2 MiB over idle in three runs; at 256 KiB 5.7 to 6.1 MiB, at the
 * same CPU per GB. Smaller reads cost CPU (128 KiB 9 % more than 256, 64 KiB
 * 30 % more and two thirds of the speed on loopback). docs/benchmarks.md,
 * "A write's size and TLS's buffer".
 */
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
    /** Buffers kept between PUTs: one for each of the uploads' default two chunks in flight (512 KiB). */
    private readonly keep = 2,
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

/** `length` bytes of the file open at `fd` from `start` (the length is the PUT's). */
export interface FileSlice {
  /** An open descriptor, the caller's: read with positioned reads (two PUTs may share it) and left open. */
  fd: number;
  start: number;
  /** Sees each buffer before it is handed to the request (a hash of exactly the bytes sent); a throw stops the body. */
  onRead?: (bytes: Buffer) => void;
}

export const isFileSlice = (body: unknown): body is FileSlice =>
  typeof body === 'object' && body !== null && Number.isSafeInteger((body as FileSlice).fd) && typeof (body as FileSlice).start === 'number' &&
  typeof (body as { pipe?: unknown }).pipe !== 'function';

/** Why reading a slice failed, as opposed to the network failing. */
export class SliceReadError extends Error {}

/** Reads up to `want` bytes at `position`, short only at the end of the file. */
function readFully(fd: number, buffer: Buffer, want: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let got = 0;
    const step = (err: NodeJS.ErrnoException | null, n: number): void => {
      if (err) return reject(err);
      got += n;
      if (n === 0 || got >= want) return resolve(got);
      fs.read(fd, buffer, got, want - got, position + got, step);
    };
    fs.read(fd, buffer, 0, want, position, step);
  });
}

const readFailed = (err: unknown): SliceReadError =>
  err instanceof SliceReadError ? err : new SliceReadError(`reading the chunk failed (${(err as NodeJS.ErrnoException).code ?? 'error'})`);

/**
 * Yields bytes [start, start + length) of the file, through one buffer. A
 * yielded buffer is overwritten by the next read, which starts only when
 * the consumer asks again: got writes each one to the request and waits for
 * the write's callback (the bytes are in the socket) before it asks. No
 * read-ahead: a read from the page cache or the card takes a fraction of the
 * time the uplink takes to send the buffer, and the other chunk in flight
 * keeps the socket busy meanwhile.
 * The buffer goes back to the pool only when the slice was read to its end.
 *
 * Hand-written rather than an async generator over FileHandle.read: that
 * made several promises and objects per read, about as much garbage per
 * chunk as got's whole request.
 */
export class FileSliceReader implements AsyncIterableIterator<Buffer> {
  private buffer: Buffer | undefined;
  /** Bytes handed out so far. */
  private at = 0;
  private ended = false;
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly slice: FileSlice,
    private readonly length: number,
    private readonly pool: BufferPool,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Buffer, undefined>> {
    return this.queue(() => this.step());
  }

  /** Waits for a step under way (a read), then ends the slice. */
  return(): Promise<IteratorResult<Buffer, undefined>> {
    return this.queue(async () => {
      this.end(false);
      return { done: true, value: undefined };
    });
  }

  /** One operation at a time, in call order, as an async generator runs them. */
  private queue<T>(op: () => Promise<T>): Promise<T> {
    const result = this.last.then(op);
    this.last = result.catch(() => undefined);
    return result;
  }

  private async step(): Promise<IteratorResult<Buffer, undefined>> {
    if (this.ended) return { done: true, value: undefined };
    try {
      if (this.at >= this.length) {
        // Asked for more after the last buffer: got has written every byte of it.
        this.end(true);
        return { done: true, value: undefined };
      }
      const buffer = (this.buffer ??= this.pool.take());
      const want = Math.min(buffer.length, this.length - this.at);
      const n = await readFully(this.slice.fd, buffer, want, this.slice.start + this.at);
      if (n < want) throw new SliceReadError(`the body ended after ${this.at + n} of the ${this.length} bytes declared (the file shrank)`);
      this.at += n;
      const value = n === buffer.length ? buffer : buffer.subarray(0, n);
      this.slice.onRead?.(value);
      return { done: false, value };
    } catch (err) {
      this.end(false);
      throw readFailed(err);
    }
  }

  /** The buffer goes back to the pool only when every byte was consumed; the descriptor is the caller's. */
  private end(whole: boolean): void {
    if (this.ended) return;
    this.ended = true;
    if (whole && this.buffer !== undefined) this.pool.give([this.buffer]);
    this.buffer = undefined;
  }
}

export const readFileSlice = (slice: FileSlice, length: number, pool: BufferPool): FileSliceReader => new FileSliceReader(slice, length, pool);

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
