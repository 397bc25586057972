// V8 collects its old generation only once it has grown some MB past what
// was live after the last full collection. Every storage PUT leaves a little
// there: got's request and options, the HTTP request and the socket's
// bookkeeping live as long as the PUT, long enough to outlive the young
// generation's collections, and die in the old one. A large upload promotes
// that share of hundreds of PUTs, so RSS would rise by the whole margin and
// stay there. A full collection after every HEAP_TRIM_EVERY_BYTES uploaded
// keeps the heap near its idle size: a few ms of CPU per 64 MiB, where the
// PUTs themselves cost a hundred times that (`npm run bench:upload` prints
// both figures).
import v8 from 'node:v8';
import { builtin } from './builtin.js';

export const HEAP_TRIM_EVERY_BYTES = 64 * 1024 * 1024;

export class HeapTrim {
  private since = 0;
  /** A collection failed: not tried again (one warning, not one per 64 MiB). */
  private broken = false;

  constructor(
    private readonly collect: () => unknown = fullCollection,
    readonly everyBytes = HEAP_TRIM_EVERY_BYTES,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  /** `bytes` more were uploaded. */
  sent(bytes: number): void {
    this.since += bytes;
    if (this.since < this.everyBytes || this.broken) return;
    // One collection however far past the mark a large chunk went.
    this.since %= this.everyBytes;
    void Promise.resolve()
      .then(this.collect)
      .catch((err: unknown) => {
        this.broken = true;
        this.onError(err);
      });
  }
}

let gc: (() => void) | undefined;

/**
 * The function that runs a full garbage collection. The process runs without
 * `--expose-gc`; the flag, set for a moment, gives `gc` to a context made
 * while it is on (one small context, made on first use), not to the agent's
 * own global. `vm` is loaded then too when the daemon's loader (daemon/boot.ts)
 * has not already.
 */
export async function garbageCollector(): Promise<() => void> {
  if (gc === undefined) {
    const vm = builtin<typeof import('node:vm')>('node:vm');
    v8.setFlagsFromString('--expose-gc');
    try {
      gc = vm.runInNewContext('gc') as () => void;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  return gc;
}

export async function fullCollection(): Promise<void> {
  (await garbageCollector())();
}
