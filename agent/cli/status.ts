// `c2c-agent status [--json]`: the running daemon's state, asked of its local
// API (GET /v1/status), no network. Without a daemon answering, the status
// file in the runtime dir tells how the last one ended (crashed, killed,
// stopped: exit 69); a runtime dir or socket this user cannot read is 78.
import { loadSettings } from '../config/settings.js';
import { SystemClock } from '../lib/clock.js';
import { AgentError, EXIT } from '../lib/errors.js';
import { readStatus, statusFile } from '../daemon/runtime/status-file.js';
import { daemonRuns } from '../daemon/runtime/run-lock.js';
import { readStatusDocument } from '../daemon/status-reader.js';
import type { StatusDocument } from '../core/status-document.js';
import type { ChannelsSection } from '../channels/section.js';
import type { LoggingSection } from '../logging/section.js';
import type { QueueSection } from '../outbox/queue-section.js';
import type { Settings } from '../config/types.js';
import { DaemonApi, refusal } from './daemon-api.js';
import { formatBytes, formatDuration, oneLine, quotePath } from '../lib/text.js';
import { pairAdvice, splitAdvice } from '../lib/advice.js';
import { blockText, uploadFigures } from '../uploads/upload-summary.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printError, printJson, printLine } from './output.js';
import { describeOffset } from './check-report.js';

export const usage = 'status [--json] [--runtime-dir DIR]';
export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
export const summary = "The running daemon's state, asked of its local API (the runtime dir's status file when none answers), no network: exit 0 while it runs, 77 in needs-pairing, 69 when it does not run.";
export const optionHelp = { json: { help: 'one JSON object on stdout instead of lines of text' } };
export const needsAlso = ['a running daemon (`c2c-agent run`) with the same runtime dir (--runtime-dir)'];

function ago(mono: number, now: number): string {
  const d = now - mono;
  return d >= 0 ? `${formatDuration(d)} ago` : `in ${formatDuration(-d)}`;
}

function humanBlock(s: StatusDocument, now: number): string[] {
  // The reason without its advice: the one piece of advice is the line on stderr (run()).
  const reason = splitAdvice(s.reason).text;
  const lines = [`state:       ${s.state}${reason ? ` (${reason})` : ''}, since ${s.since.at} (${ago(s.since.monotonic, now)})`];
  if (s.device) {
    // Names the service sent, kept in status.json: one bounded line each.
    const project = s.project ? ` in project ${oneLine(s.project.name ?? '?', 120)}${s.project.id ? ` (${oneLine(String(s.project.id), 80)})` : ''}` : '';
    lines.push(`device:      ${oneLine(s.device.name ?? '?', 120)} (${oneLine(String(s.device.id), 80)})${project}`);
  }
  if (s.lastHeartbeat) {
    const h = s.lastHeartbeat;
    lines.push(`heartbeat:   last ${h.at} (${ago(h.monotonic, now)}): ${h.result}${h.status ? ` ${h.status}` : ''}${h.error ? `, ${h.error}` : ''}`);
  }
  if (s.nextHeartbeat) lines.push(`next:        heartbeat ${ago(s.nextHeartbeat.monotonic, now)} (about ${s.nextHeartbeat.at})`);
  else if (s.nextCheck) lines.push(`next:        ${s.state === 'needs-pairing' ? 'credentials check' : 'device check (GET /v2/devices/me)'} ${ago(s.nextCheck.monotonic, now)}`);
  lines.push(`failures:    ${s.consecutiveFailures} in a row`);
  const rl = s.rateLimit;
  if (s.channels) lines.push(`channels:    ${channelSummary(s.channels)}`);
  if (s.queue) lines.push(`queue:       ${queueSummary(s.queue.byKind)}`);
  if (s.uploads) lines.push(`uploads:     ${uploadFigures(s.uploads) ?? 'none waiting'}`);
  if (s.logging) lines.push(`logging:     ${loggingSummary(s.logging)}`);
  // What keeps uploads from going, each on its own line: never hidden behind the figures above.
  for (const b of s.uploads?.blocked ?? []) {
    const { label, text } = blockText(b, now);
    lines.push(`${`${label}:`.padEnd(13)}${text}`);
  }
  if (s.uploads?.mediaDirMissing !== undefined) lines.push(`media dir:   ${quotePath(s.uploads.mediaDirMissing)} does not exist: nothing is uploaded from it until it does`);
  // Real-time uploads: each recording, what is on disk and sent, and when it is finished with what is on disk if nothing more comes.
  for (const r of s.uploads?.recording ?? []) {
    const idle = r.idleSeconds >= 60 ? `, nothing written for ${formatDuration(r.idleSeconds * 1000)} (finished as it is in ${formatDuration(r.finishedInSeconds * 1000)})` : '';
    lines.push(`recording:   ${oneLine(r.name, 120)}: ${formatBytes(r.bytesSent)} of ${formatBytes(r.bytesOnDisk)} on disk sent${idle}`);
  }
  if (rl && (rl.limit !== undefined || rl.remaining !== undefined)) {
    lines.push(`rate limit:  ${rl.remaining ?? '?'} of ${rl.limit ?? '?'} left${rl.windowMs !== undefined ? ` per ${formatDuration(rl.windowMs)}` : ''}`);
  }
  // The state line already names a clock problem that is its reason: said once.
  if (s.clockProblem !== undefined) {
    if (!reason.includes(s.clockProblem)) lines.push(`clock:       ${s.clockProblem}`);
  }
  else if (s.clockOffsetMs !== undefined) lines.push(`clock:       ${describeOffset(s.clockOffsetMs)}`);
  lines.push(
    `agent:       ${s.agentVersion}, pid ${s.pid}, started ${s.started.at}, firmware ${s.firmwareVersion}, profile ${s.profile ?? 'none'}` +
      (s.timeScale !== 1 ? `, time scale ${s.timeScale}` : ''),
  );
  return lines;
}

/** Real-time logging's presses and comments: "1 waiting to be sent, 4 sent, none failed". */
function loggingSummary(l: LoggingSection): string {
  return `${l.pending > 0 ? `${l.pending} waiting to be sent` : 'none waiting'}, ${l.sent} sent, ${l.failed > 0 ? `${l.failed} failed (see c2c-agent queue)` : 'none failed'}`;
}

/** "video, audio detected; 2 known to the service; no sync pending" */
function channelSummary(ch: ChannelsSection): string {
  const detected = ch.detected.length > 0 ? `${ch.detected.join(', ')} detected` : 'none detected';
  const known = ch.known === null ? 'not synced with the service yet' : `${ch.known.length} known to the service`;
  const pending = ch.pendingSyncs ? `${ch.pendingSyncs} sync pending` : 'no sync pending';
  return `${detected}; ${known}; ${pending}`;
}

/** "2 pending, 1 dead-lettered (see c2c-agent queue), 1 cancelled": a cancelled item is its own count, never a failure. */
function queueSummary(byKind: QueueSection['byKind']): string {
  const sum = (state: string): number => Object.values(byKind).reduce((n, k) => n + (k[state]?.items ?? 0), 0);
  const dead = sum('dead');
  const cancelled = sum('cancelled');
  return `${sum('pending')} pending${dead > 0 ? `, ${dead} dead-lettered (see c2c-agent queue)` : ''}${cancelled > 0 ? `, ${cancelled} cancelled` : ''}`;
}

/** The running daemon's own answer (GET /v1/status), or undefined when no daemon serves its API. */
async function askDaemon(settings: Settings): Promise<StatusDocument | undefined> {
  const daemon = new DaemonApi(settings);
  const reply = await daemon.request('GET', '/v1/status', undefined, 5_000);
  if (reply === undefined) return undefined;
  if (reply.status !== 200) throw refusal(reply, 'GET /v1/status');
  const doc = readStatusDocument(reply.body);
  if (doc === undefined) throw new AgentError('protocol', `the daemon's answer to GET /v1/status at ${daemon.socket} is not a status document this agent understands`);
  return doc;
}

function report(ctx: CommandContext, settings: Settings, snap: StatusDocument): number {
  const now = new SystemClock(snap.timeScale > 0 ? snap.timeScale : 1).now();
  // Scripts and health checks act on the code: running but unpaired is 77, like `check`.
  const exitCode = snap.state === 'needs-pairing' ? EXIT.noperm : EXIT.ok;
  if (ctx.json) {
    const nextInMs = snap.nextHeartbeat ? Math.round(snap.nextHeartbeat.monotonic - now) : undefined;
    printJson({ ok: exitCode === EXIT.ok, exitCode, running: true, ...snap, ...(nextInMs !== undefined && { nextHeartbeatInMs: nextInMs }) });
  } else {
    printLine(...humanBlock(snap, now));
  }
  // The contract's one line on stderr for every non-zero exit; in needs-pairing, the one piece of advice.
  if (exitCode !== EXIT.ok) {
    const { text, advice } = splitAdvice(snap.reason);
    printError(`needs pairing: ${advice ?? pairAdvice(settings.token !== undefined)}${ctx.json && text ? ` (${text})` : ''}`);
  }
  return exitCode;
}

export async function run(ctx: CommandContext): Promise<number> {
  const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
  // A running daemon answers for itself; the status file then only tells how a daemon that is gone ended.
  let live: StatusDocument | undefined;
  try {
    live = await askDaemon(settings);
  } catch (err) {
    return fail(err, { json: ctx.json, extra: { running: null } });
  }
  if (live !== undefined) return report(ctx, settings, live);
  const file = statusFile(settings.runtimeDir);
  const read = readStatus(settings.runtimeDir, settings.sources.runtimeDir);
  if (read.kind === 'missing') {
    return fail(new AgentError('unavailable', `daemon not running (no status file ${file}); ${settings.startAdvice}`), {
      json: ctx.json,
      extra: { running: false, statusFile: file },
    });
  }
  if (read.kind === 'unreadable') {
    // A file that could not be read at all is a setting or a permission to fix (lib/fs-errors.ts); one read but not understood leaves the daemon unknown.
    return fail(read.cause ?? new AgentError('unavailable', `daemon status unknown: cannot read ${file} (${read.error})`), {
      json: ctx.json,
      extra: { running: false, statusFile: file },
    });
  }
  const snap = read.doc;
  if (!daemonRuns(snap)) {
    return fail(new AgentError('unavailable', notRunningMessage(snap, settings)), { json: ctx.json, extra: { running: false, statusFile: file, last: snap } });
  }
  return report(ctx, settings, snap);
}

/**
 * How the last daemon ended, and the next step: start it, and where its log
 * says why it stopped (the journal under systemd; a setting of its own, such
 * as the simulator's, names its own way and no journal).
 */
export function notRunningMessage(snap: Pick<StatusDocument, 'state' | 'pid' | 'since' | 'updated'>, settings: Pick<Settings, 'startAdvice' | 'sources'>): string {
  const ended = snap.state === 'stopped' ? `stopped at ${snap.since.at}` : `pid ${snap.pid} gone; last state ${snap.state} at ${snap.updated.at}`;
  const log = settings.sources.startAdvice === 'default' ? '; its log: journalctl -u c2c-agent' : '';
  return `daemon not running (${ended}); ${settings.startAdvice}${log}`;
}
