// `c2c-agent channels [--json]`: each channel the firmware profile lists,
// whether it is plugged in here, whether the service knows it (and as which
// channel id), and whether a sync is waiting in the queue; plus the unit's
// hardware facts. The service is asked once (GET /v2/devices/me) when the
// unit is paired; without it the local half is still shown.
import type { DeviceChannel } from '../api/types.js';
import { createServiceApi } from '../api/service.js';
import { loadCredentials } from '../auth/credentials.js';
import { ChannelMapStore, type ChannelMap } from '../channels/channel-map.js';
import { detectChannels } from '../channels/detect.js';
import { hardwareFacts } from '../channels/hardware.js';
import { CHANNEL_SYNC_KIND } from '../channels/sync-worker.js';
import { loadProfiles, selectProfile } from '../config/profiles.js';
import { loadSettings } from '../config/settings.js';
import type { Settings } from '../config/types.js';
import { SystemClock } from '../lib/clock.js';
import { checkRegularFileSync, READ_LIMITS } from '../lib/bounded-read.js';
import { AgentError, EXIT } from '../lib/errors.js';
import { readQueueOf } from '../outbox/reader.js';
import type { CommandContext, CommandOptions } from './command.js';
import { fail, printJson, printLine } from './output.js';
import { agentVersion } from './version.js';
import { formatBytes, oneLine } from '../lib/text.js';

export const usage = 'channels [--json]';
export const options = { json: { type: 'boolean' } } satisfies CommandOptions;
export const summary = 'The channels the firmware profile lists: which are plugged in here, which the service knows (asked once when paired), which wait to sync.';
export const optionHelp = { json: { help: 'one JSON object on stdout instead of lines of text' } };

type AtService = { id: string; name: string | null; status: string | null } | null | 'unknown';
type ServiceView = { reachable: true; channels: DeviceChannel[] } | { reachable: false; error: string };

async function serviceChannels(settings: Settings): Promise<ServiceView> {
  if (settings.apiUrl === '') return { reachable: false, error: 'no API URL configured' };
  let api;
  try {
    const creds = loadCredentials(settings);
    api = createServiceApi({ baseUrl: settings.apiUrl, token: creds.accessToken, firmwareVersion: settings.firmwareVersion, agentVersion: agentVersion(), clock: new SystemClock(settings.timeScale), extraCas: settings.extraCas });
    return { reachable: true, channels: (await api.getDevice()).value.channels ?? [] };
  } catch (err) {
    return { reachable: false, error: err instanceof AgentError ? err.message : String(err) };
  } finally {
    api?.close();
  }
}

async function recordOf(settings: Settings): Promise<{ map: ChannelMap; error?: string }> {
  try {
    const store = new ChannelMapStore(settings.stateDir);
    // conf reads the record whole and blocking: a FIFO or a huge file there must be refused before it opens it.
    checkRegularFileSync(store.file, { what: 'channel record', maxBytes: READ_LIMITS.small, source: `<state-dir>/channels.json, the state dir from ${settings.sources.stateDir ?? 'default'}` });
    return { map: await store.load() };
  } catch (err) {
    return { map: {}, error: err instanceof Error ? err.message : String(err) };
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  try {
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const profile = selectProfile(loadProfiles(settings.profilesDir, settings.sources.profilesDir), settings.firmwareVersion, settings.sources.firmwareVersion ?? 'default');
    const detected = detectChannels(profile.channels, settings.hostRoot);
    const [service, record, queue, hardware] = await Promise.all([
      serviceChannels(settings),
      recordOf(settings),
      readQueueOf(settings.stateDir, settings.sources.stateDir, settings.queueMaxBytes),
      hardwareFacts({ stateDir: settings.stateDir }),
    ]);
    const listed = service.reachable ? service.channels : [];
    const pendingSyncs = queue.items.filter((i) => i.kind === CHANNEL_SYNC_KIND && i.state === 'pending').length;
    const channels = profile.channels.map((spec, index) => {
      const id = record.map[spec.key];
      const atService = listed.find((c) => c.id === id) ?? listed.find((c) => c.external_index === index);
      return {
        key: spec.key,
        name: spec.name,
        assetType: spec.assetType,
        deviceModelId: spec.deviceModelId,
        detected: detected.has(spec.key),
        recordedId: id ?? null,
        service: (service.reachable ? (atService ? { id: atService.id, name: atService.name ?? null, status: atService.status ?? null } : null) : 'unknown') as AtService,
      };
    });
    const accounted = new Set(channels.flatMap((c) => (typeof c.service === 'object' && c.service !== null ? [c.service.id] : [])));
    const strays = listed.filter((c) => !accounted.has(c.id)).map((c) => ({ id: c.id, name: c.name ?? null, external_index: c.external_index ?? null }));
    const facts = { profile: profile.id, channels, strays, pendingSyncs, service: service.reachable ? { reachable: true } : service, ...(record.error && { recordError: record.error }), hardware };
    if (ctx.json) {
      printJson({ ok: true, exitCode: EXIT.ok, ...facts });
      return EXIT.ok;
    }
    const lines = [`profile: ${profile.id} (${profile.name})`];
    for (const c of channels) {
      const at = c.service;
      // Ids and states the service sent: one bounded line each.
      const svc = at === 'unknown' ? 'service: unknown' : at === null ? 'not at the service' : `at the service as ${oneLine(at.id, 80)}${at.status ? ` (${oneLine(at.status, 40)})` : ''}`;
      lines.push(`  ${c.key.padEnd(12)} ${c.detected ? 'detected    ' : 'not detected'}  ${svc}   ${c.name} [${c.deviceModelId}]`);
    }
    if (!service.reachable) lines.push(`service: not asked (${service.error})`);
    for (const s of strays) lines.push(`  stray at the service: ${oneLine(s.id, 80)} ${oneLine(s.name ?? '', 120)} (the next sync disconnects it)`);
    lines.push(`pending syncs: ${pendingSyncs}`);
    if (record.error) lines.push(`warning: ${record.error}`);
    const hw = hardware;
    if (hw.model || hw.os) lines.push(`hardware: ${[hw.manufacturer, hw.model].filter(Boolean).join(' ') || 'unknown model'}${hw.serial ? `, serial ${hw.serial}` : ''}${hw.os ? `; ${[hw.os.distro, hw.os.release, hw.os.kernel].filter(Boolean).join(' ')}` : ''}`);
    const space = hw.space?.stateDir;
    if (space?.freeBytes !== undefined) lines.push(`free space: ${formatBytes(space.freeBytes)}${space.totalBytes !== undefined ? ` of ${formatBytes(space.totalBytes)}` : ''} (state dir)`);
    printLine(...lines);
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
