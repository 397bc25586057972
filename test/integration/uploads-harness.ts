// Shared by the upload suites (uploads*.test.ts): a rig with a media dir next
// to the channel rig (multi-av-tc, firmware 1.6.0, credentials in the state
// dir), the daemon started with the media settings, media files of known
// bytes, and the fake's view of what arrived: assets by name, storage PUTs,
// bytes received, per-part sha256 checked against the file's own byte ranges
// (computed here from the service's rule, docs/service-api.md "Uploads", not by the agent's code).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterEach } from '@jest/globals';
import { type FakeCloud } from '../fake-cloud/index.js';
import { PART } from '../support/assets.js';
// The fake's view of what arrived, checked against the files' bytes: test/support/assets.ts (the in-process suites share it).
export * from '../support/assets.js';
import { readStatus } from '../../agent/daemon/runtime/status-file.js';
import { ensureBuilt, killAll, makeDirs, removeDirs, type AgentDirs, startTestCloud, waitFor } from './agent-process.js';
import { cli, makeRig, startChannelAgent, type Rig } from './channels-harness.js';
import { reachState, type RefreshingAgent } from './refresh-harness.js';


export interface UploadRig extends Rig {
  media: string;
}

export function makeUploadRig(cloud: FakeCloud, dirs: AgentDirs, scale: number): UploadRig {
  const rig = makeRig(cloud, dirs, scale);
  const media = join(dirs.root, 'media');
  mkdirSync(media, { recursive: true });
  // In the config file too, as on a camera: `upload` without a daemon takes the paths the daemon would (the media dir and the upload roots).
  writeFileSync(join(dirs.root, 'config.json'), `${JSON.stringify({ mediaDir: media, uploadRoots: join(dirs.root, 'outside') })}\n`);
  return { ...rig, media };
}

export interface MediaOptions {
  settleSeconds?: number;
  deleteAfterUpload?: boolean;
  env?: Record<string, string>;
}

/** `run` with the rig's media dir (settle 1 agent s unless told). */
export function startUploadAgent(rig: UploadRig, o: MediaOptions = {}): RefreshingAgent {
  return startChannelAgent(rig, {
    C2C_MEDIA_DIR: rig.media,
    C2C_MEDIA_SETTLE_SECONDS: String(o.settleSeconds ?? 1),
    C2C_DELETE_AFTER_UPLOAD: String(o.deleteAfterUpload ?? false),
    // Where the tests keep files handed over with `upload` (the local API takes paths only from the media dir and these).
    C2C_UPLOAD_ROOTS: join(rig.dirs.root, 'outside'),
    ...o.env,
  });
}

/** Writes `size` random bytes at `file` (dirs made); `oldMs` back-dates the mtime so the watcher takes it at first sight. */
export function writeMedia(file: string, size: number, oldMs?: number): Buffer {
  mkdirSync(dirname(file), { recursive: true });
  const data = randomBytes(size);
  if (oldMs === undefined) {
    writeFileSync(file, data);
    return data;
  }
  // An old file appears whole, with its old time, as a recorder's rename makes it: written and dated
  // under a name the watcher ignores, then renamed. Dated in place, a loaded machine's watcher could
  // queue it between the write and the utimes, and find it changed at once.
  const temp = join(dirname(file), `.${basename(file)}.writing`);
  writeFileSync(temp, data);
  const t = (Date.now() - oldMs) / 1000;
  utimesSync(temp, t, t);
  renameSync(temp, file);
  return data;
}

export interface UploadCounts {
  pending: number;
  done: number;
  dead: number;
  dropped: number;
}

/** `queue --json`: the upload kind's counts and its listed (pending or dead) items. */
export async function uploadQueue(rig: Rig): Promise<{ counts: UploadCounts; items: Array<Record<string, unknown>>; json: Record<string, unknown> }> {
  const r = await cli(rig, ['queue']);
  const counts = uploadCountsOf((r.json.byKind as Record<string, Record<string, { items: number }>> | undefined)?.upload);
  const items = ((r.json.items as Array<Record<string, unknown>> | undefined) ?? []).filter((i) => i.kind === 'upload');
  return { counts, items, json: r.json };
}

/** The upload counts of the running daemon's status document (status.json), read in this process; undefined without one. */
function documentUploadCounts(rig: Rig): UploadCounts | undefined {
  const r = readStatus(rig.dirs.runtimeDir);
  if (r.kind !== 'ok') return undefined;
  return uploadCountsOf(r.doc.queue?.byKind.upload);
}

/** The upload kind's items by state, as `queue --json` and the status document both give them (`byKind.upload`). */
function uploadCountsOf(by: Record<string, { items: number }> | undefined): UploadCounts {
  return { pending: by?.pending?.items ?? 0, done: by?.done?.items ?? 0, dead: by?.dead?.items ?? 0, dropped: by?.dropped?.items ?? 0 };
}

/**
 * Waits until `holds` is true of the upload counts `queue --json` prints, and returns them. It polls
 * the daemon's status document in-process and runs `queue --json` once the document agrees (or
 * every 2 s, whatever the document says): a `queue --json` every 50 to 100 ms kept a core busy
 * starting processes for the whole wait.
 */
export async function waitForUploads(rig: Rig, what: string, holds: (c: UploadCounts) => boolean, timeoutMs: number): Promise<UploadCounts> {
  let askedAt = 0;
  return waitFor(
    what,
    async () => {
      const doc = documentUploadCounts(rig);
      if (!(doc !== undefined && holds(doc)) && Date.now() - askedAt < 2_000) return undefined;
      askedAt = Date.now();
      const { counts } = await uploadQueue(rig);
      return holds(counts) ? counts : undefined;
    },
    timeoutMs,
    50,
  );
}

/** The service's channel id for a profile key, as the agent recorded it (channels.json), once the service lists it too. */
export function recordedChannel(rig: Rig, key: string): string | undefined {
  const file = join(rig.dirs.stateDir, 'channels.json');
  if (!existsSync(file)) return undefined;
  let map: Record<string, unknown> | undefined;
  try {
    map = (JSON.parse(readFileSync(file, 'utf8')) as { channels?: Record<string, unknown> }).channels;
  } catch {
    return undefined;
  }
  const id = map?.[key];
  const listed = ((rig.cloud.device(rig.device.id) as { channels?: Array<{ id: string }> }).channels ?? []).some((c) => c.id === id);
  return typeof id === 'string' && listed ? id : undefined;
}

/** Tail of the agent's pino lines that are warnings or worse, for failure messages. */
export function agentWarnings(agent: RefreshingAgent, max = 20): string {
  return agent
    .lines()
    .filter((l) => typeof l.level === 'number' && l.level >= 40)
    .slice(-max)
    .map((l) => `${String(l.msg)} ${JSON.stringify({ ...l, msg: undefined, time: undefined, pid: undefined, hostname: undefined, level: undefined })}`)
    .join('\n');
}

/**
 * A fresh fake cloud (small parts) and unit dirs for each test, killed and
 * removed after it. Call once at the top of a test file.
 */
export function useUploadRigs(scale: number): { rigUp(): Promise<UploadRig>; online(rig: UploadRig, agent: RefreshingAgent, timeoutMs?: number): Promise<unknown> } {
  let cloud: FakeCloud | undefined;
  let dirs: AgentDirs | undefined;
  afterEach(async () => {
    await killAll();
    await cloud?.close();
    if (dirs) removeDirs(dirs);
    cloud = dirs = undefined;
  });
  return {
    async rigUp() {
      await ensureBuilt();
      cloud = await startTestCloud({ timeScale: scale, uploadPartBytes: PART });
      dirs = makeDirs();
      return makeUploadRig(cloud, dirs, scale);
    },
    online: (rig, agent, timeoutMs = 20_000) => reachState({ cloud: rig.cloud, dirs: rig.dirs, timeScale: scale, agent, state: 'online', timeoutMs }),
  };
}
