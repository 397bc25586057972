// `c2c-agent queue [--json]`: what the offline queue holds, by kind and state
// (pending, in flight, done, dead-lettered, dropped), its bytes on flash, the
// oldest pending item's age, and what the cap dropped or corruption moved
// aside. Read straight from the state dir without taking the daemon's lock or
// touching a file, so it works whether or not the daemon runs; a running
// daemon adds what only it knows (in flight, attempts, skipped media-dir
// entries) through its local API (GET /v1/status).
import { loadSettings } from '../config/settings.js';
import type { Settings } from '../config/types.js';
import { readStatusDocument } from '../daemon/status-reader.js';
import type { QueueSection } from '../outbox/queue-section.js';
import type { SkippedSection } from '../uploads/section.js';
import { AgentError, EXIT } from '../lib/errors.js';
import { DaemonApi } from './daemon-api.js';
import { readQueueOf } from '../outbox/reader.js';
import type { OutboxItem } from '../outbox/types.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printJson, printLine } from './output.js';
import { isUploadKind, uploadView, type UploadView } from '../uploads/upload-item.js';
import { SKIPPED_LIST_MAX } from '../uploads/media-watcher.js';
import { formatBytes, formatDuration, oneLine, plural, quote } from '../lib/text.js';

export const usage = 'queue [--json]';
export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
export const summary = 'What the offline queue holds (channel operations, uploads), read from the state dir, whether or not the daemon runs.';
export const optionHelp = { json: { help: 'one JSON object on stdout instead of lines of text' } };

/** Items listed one by one (the counts cover all of them). */
const LIST_MAX = 50;
/** Finished uploads listed after those, the newest. */
const DONE_LIST_MAX = 10;

/**
 * What `queue` lists: pending and dead-lettered items first (what needs an
 * eye), then the newest finished uploads the queue still holds. A finished
 * clip stays on disk until its segment goes, hundreds of them in one, and
 * must never push a dead-lettered one off the list.
 */
export function listedItems(items: readonly OutboxItem[]): OutboxItem[] {
  const open = items.filter((i) => i.state === 'pending' || i.state === 'dead').slice(0, LIST_MAX);
  const done = items.filter((i) => isUploadKind(i.kind) && i.state === 'done').slice(-DONE_LIST_MAX);
  return [...open, ...done];
}

/** What `queue` takes from the daemon's queue section: which items run, and their attempts. */
export type DaemonQueueView = Pick<QueueSection, 'inFlight' | 'attempts'>;

/** What only a running daemon knows, from its GET /v1/status: in flight and attempts (the queue section), and the media-dir entries it skips. */
async function daemonView(settings: Settings): Promise<{ view: DaemonQueueView; skipped: SkippedSection | undefined } | { view?: undefined; warning?: string }> {
  let reply;
  try {
    reply = await new DaemonApi(settings).request('GET', '/v1/status', undefined, 5_000);
  } catch (err) {
    // The files are read all the same: what the daemon alone knows is missing, and the line says why.
    return { warning: err instanceof AgentError ? err.message : String(err) };
  }
  if (reply === undefined) return {};
  const doc = reply.status === 200 ? readStatusDocument(reply.body) : undefined;
  if (doc === undefined) return { warning: `the daemon's GET /v1/status answered ${reply.status} with no status document; in flight and attempts not shown` };
  const { queue, uploads } = doc;
  // The document was checked when read (core/status-document.ts); the list is capped here too.
  const skipped = uploads?.skipped && { entries: uploads.skipped.entries.slice(0, SKIPPED_LIST_MAX), more: uploads.skipped.more };
  return { view: queue ?? { inFlight: [], attempts: {} }, skipped };
}

/** One item as `queue` lists it (`--json` prints these). */
export interface ShownItem {
  id: string;
  kind: string;
  state: OutboxItem['state'] | 'in flight';
  createdAt: string;
  upload?: UploadView;
  reason?: string;
  attempts?: number;
  lastError?: string;
}

export function shown(item: OutboxItem, view: DaemonQueueView | undefined): ShownItem {
  // The daemon's view is rewritten at most once a second: an item the disk already shows ended is not in flight.
  const running = item.state === 'pending' && (view?.inFlight.includes(item.id) ?? false);
  const attempts = view?.attempts[item.id];
  const upload = uploadView(item, running);
  return {
    id: item.id,
    kind: item.kind,
    state: running ? 'in flight' : item.state,
    createdAt: item.createdAt,
    ...(upload !== undefined && { upload }),
    ...(item.reason !== undefined && { reason: item.reason }),
    ...(attempts !== undefined && { attempts: attempts.count, lastError: attempts.lastError }),
  };
}

/**
 * One item's line. A file's name, a reason and an error may hold a newline
 * (a clip named so by the camera, a path in a reason): each is put on one
 * line, or a name could forge lines of its own in the list.
 */
export function itemLine(i: ShownItem): string {
  const u = i.upload;
  const what = u !== undefined
    ? `${u.state.padEnd(14)} ${oneLine(u.name, 120)}: ${formatBytes(u.bytesDone)} of ${formatBytes(u.bytesTotal)}${u.realtime === 'recording' ? ' so far (recording)' : ''} [${i.id}]`
    : `${i.state.padEnd(9)} ${i.kind} ${i.id} since ${i.createdAt}`;
  return `  ${what}${i.reason ? `: ${oneLine(i.reason, 300)}` : ''}${i.attempts ? ` (${plural(i.attempts, 'attempt')}, last: ${oneLine(i.lastError ?? '', 300)})` : ''}`;
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const { dir, items, stats } = await readQueueOf(settings.stateDir, settings.sources.stateDir, settings.queueMaxBytes);
    const daemon = await daemonView(settings);
    const view = daemon.view;
    const skipped = daemon.view !== undefined ? daemon.skipped : undefined;
    const warning = daemon.view === undefined ? daemon.warning : undefined;
    const oldestAgeMs = stats.oldestPending === null ? null : Math.max(0, Date.now() - Date.parse(stats.oldestPending));
    const listed = listedItems(items).map((i) => shown(i, view));
    const inFlight = view?.inFlight.length ?? 0;
    if (ctx.json) {
      printJson({ ok: true, exitCode: EXIT.ok, dir, capBytes: settings.queueMaxBytes, daemonRunning: view !== undefined, inFlight, oldestPendingAgeMs: oldestAgeMs, ...stats, items: listed, ...(skipped !== undefined && { skipped }), ...(warning !== undefined && { warnings: [warning] }) });
      return EXIT.ok;
    }
    const lines = [`queue: ${dir}, ${formatBytes(stats.diskBytes)} on flash (cap ${formatBytes(settings.queueMaxBytes)})${view ? '' : warning !== undefined ? '; the daemon could not be asked' : '; the daemon is not running'}`];
    if (warning !== undefined) lines.push(`warning: ${warning}`);
    const kinds = Object.entries(stats.byKind);
    if (kinds.length === 0) lines.push('  empty');
    for (const [kind, by] of kinds) {
      // A cancelled item did not fail: counted on its own, never among the dead-lettered.
      lines.push(`  ${kind}: ${by.pending.items} pending (${formatBytes(by.pending.bytes)}), ${by.done.items} done, ${by.dead.items} dead-lettered, ${by.cancelled.items} cancelled, ${by.dropped.items} dropped`);
    }
    if (inFlight > 0) lines.push(`in flight: ${inFlight}`);
    if (stats.oldestPending !== null) lines.push(`oldest pending: ${stats.oldestPending} (${formatDuration(oldestAgeMs ?? 0)} ago)`);
    const dropped = Object.entries(stats.dropped);
    lines.push(`dropped by the cap: ${dropped.length === 0 ? 'none' : dropped.map(([k, n]) => plural(n, `${k} item`)).join(', ')}; corrupt segments moved aside: ${stats.quarantined}`);
    if (stats.unwritten > 0) lines.push(`not yet on flash (the disk refused): ${plural(stats.unwritten, 'record')}`);
    for (const i of listed) lines.push(itemLine(i));
    if (skipped !== undefined && skipped.entries.length + skipped.more > 0) {
      lines.push(`skipped in the media dir (not uploaded): ${plural(skipped.entries.length + skipped.more, 'entry', 'entries')}`);
      for (const e of skipped.entries) lines.push(`  ${quote(e.name)}: ${oneLine(e.reason)}`);
      if (skipped.more > 0) lines.push(`  and ${skipped.more} more, not listed`);
    }
    printLine(...lines);
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
