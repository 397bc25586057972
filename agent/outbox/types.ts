// The durable outbox's vocabulary: what the rest of the agent puts in it,
// what it keeps about each item, and the file system it writes through (an
// interface, so tests can crash it between any two operations).

/** What an item has become; only `pending` items are handed to a worker. */
export type ItemState = 'pending' | 'done' | 'dead' | 'dropped';

export interface OutboxItem<P = unknown> {
  /** The idempotency key: `<boot id>:<sequence>`, unique across reboots without trusting the wall clock. */
  id: string;
  /** Which worker runs it: 'channel-connect', 'channel-disconnect', later 'upload'. */
  kind: string;
  /**
   * Items that stand for the same thing (one channel's key): a newer put
   * supersedes an older pending one, which is marked done with reason
   * 'superseded'. Absent: every item stands alone.
   */
  group?: string;
  /** Higher survives longer when the cap forces eviction (lowest priority, then oldest, goes first). */
  priority: number;
  payload: P;
  /** Wall time of the put, ISO 8601: reports only (the clock may be wrong before NTP). */
  createdAt: string;
  /**
   * What this item is charged against the cap: the bytes its records take on
   * disk (its put plus its progress records), plus, while it is not urgent,
   * the few bytes the urgency flag would add (ledger.ts chargeOf), so that a
   * change of urgency never needs room the cap did not admit.
   */
  bytes: number;
  state: ItemState;
  /** The newest progress record's data (a resumable job's done chunks); undefined before any. */
  progress?: unknown;
  /** Why it is dead or dropped, one line. */
  reason?: string;
  /** Taken before the items that are not (a file someone asked for first); kept on flash with the item. */
  urgent?: boolean;
}

/** An item someone cancelled ends dead with a reason that starts with this: never retried, shown as cancelled. */
export const CANCELLED = 'cancelled';

export interface PutOptions {
  group?: string;
  /** Default 0. */
  priority?: number;
  /** Taken before items that are not urgent. */
  urgent?: boolean;
}

/** The states items are counted by: an item's state, a cancelled one (dead, its reason starting with CANCELLED) apart. */
export type CountedState = ItemState | 'cancelled';

export interface OutboxStats {
  /** Items and bytes by kind and counted state (done items are counted until their segment is deleted); cancelled ones are not in `dead`. */
  byKind: Record<string, Record<CountedState, { items: number; bytes: number }>>;
  /** Wall ISO time of the oldest pending item's put, or null. */
  oldestPending: string | null;
  /** Items evicted by the cap since the queue was created, by kind. */
  dropped: Record<string, number>;
  /** Segments moved aside as corrupt since the queue was created. */
  quarantined: number;
  /** Bytes of live segments on disk. */
  diskBytes: number;
  /** Records held in memory because the disk refused them (ENOSPC, EROFS); 0 when healthy. */
  unwritten: number;
  /** What the pending items are charged (the sum of their `bytes`: their records, and room for the urgency flag of each one not urgent): what capBytes limits, never above it. */
  liveBytes: number;
}

/**
 * The file operations the outbox uses, as promises. The real one is
 * node:fs; the model-based test uses one that can lose everything not yet
 * fsynced (file data) or whose directory was not fsynced (creations,
 * renames, unlinks) at any crash point.
 */
export interface OutboxFs {
  mkdir(dir: string): Promise<void>;
  readdir(dir: string): Promise<string[]>;
  /** The whole file; one that is not a regular file of at most `maxBytes` is refused (it is then treated as corrupt). */
  readFile(file: string, maxBytes: number): Promise<Uint8Array>;
  /** Appends at the end, creating the file if needed (mode 0600). */
  append(file: string, data: Uint8Array): Promise<void>;
  /** Makes the file's data durable. */
  fsync(file: string): Promise<void>;
  /** Makes the directory's entries (creations, renames, unlinks) durable. */
  fsyncDir(dir: string): Promise<void>;
  truncate(file: string, length: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(file: string): Promise<void>;
}

/** The outbox's sizes and timing unless told otherwise (the cap is the setting queueMaxBytes's default too). */
export const OUTBOX_DEFAULTS = {
  capBytes: 4 * 1024 * 1024,
  segmentBytes: 256 * 1024,
  flushMs: 500,
} as const;
