// `c2c-agent press CHANNEL INDEX [--timecode TC] [--rate R] [--json]`: a
// press of one of the firmware profile's inputs (real-time logging,
// docs/real-time-logging.md), for a camera's scripts and buttons wired some
// other way. With a daemon running it goes through its local API (POST
// /v1/inputs/{channel}/{index}); without one this command puts it in the
// queue itself, holding the daemon's locks for the moment (as `upload`
// does), and the next `run` sends it with the seconds it waited: a press is
// never lost because the daemon was restarting. Either way it is checked
// against the profile first (64 for an input it has not, or a malformed
// timecode or rate) and said to be queued only once it is on flash.
import { loadSettings } from '../config/settings.js';
import { loadProfiles, selectProfile } from '../config/profiles.js';
import { AgentError, EXIT, usageError } from '../lib/errors.js';
import { quote } from '../lib/text.js';
import { makePress, PRESS_KIND, PRESS_PRIORITY, PressRefused, type PressRequest } from '../logging/press.js';
import { readBootId } from '../outbox/outbox.js';
import { queueDirOf } from '../outbox/location.js';
import type { CommandContext, CommandOptions } from './command.js';
import { DaemonApi, refusal } from './daemon-api.js';
import { fail, printJson, printLine } from './output.js';
import { putInQueue, withQueueLocks } from './queue-locks.js';

export const usage = 'press CHANNEL INDEX [--timecode TC] [--rate R] [--json]';
export const options = { json: { type: 'boolean' }, timecode: { type: 'string' }, rate: { type: 'string' } } satisfies CommandOptions;
export const allowPositionals = true;
export const summary = "Presses one of the firmware profile's inputs (a button that marks the take in the cloud): through the running daemon, or queued for its next start.";
export const optionHelp = {
  json: { help: 'one JSON object on stdout instead of lines of text' },
  timecode: { value: 'HH:MM:SS:FF', help: "the recorder's timecode of the press (HH:MM:SS;FF in drop-frame)", default: "the time of day at the profile's timecode rate, or none" },
  rate: { value: 'N|N/D', help: 'the timecode rate: 25, or 24000/1001 for 23.976', default: "the profile's timecode rate" },
};
export const help = [
  'CHANNEL is a channel key of the firmware profile and INDEX one of its inputs (`c2c-agent profiles` lists them). The press is on flash when this command says so; the daemon sends it once the service answers, with the seconds it waited.',
  'Exit 64 for an input the profile does not have or a malformed timecode or rate (nothing is queued), 78 when no profile covers the firmware.',
];

interface DaemonPress {
  press: { id: string; channel: string; index: number; state: string };
}

const isDaemonPress = (v: unknown): v is DaemonPress => {
  const p = (v as Partial<DaemonPress> | undefined)?.press;
  return typeof p?.id === 'string' && typeof p.channel === 'string' && typeof p.index === 'number';
};

export async function run(ctx: CommandContext): Promise<number> {
  try {
    if (ctx.positionals.length !== 2) throw usageError('press: name the CHANNEL and the INDEX of the input (c2c-agent profiles lists them); run c2c-agent press --help');
    const [channel, index] = ctx.positionals as [string, string];
    const req: PressRequest = {
      ...(typeof ctx.values.timecode === 'string' && { timecode: ctx.values.timecode }),
      ...(typeof ctx.values.rate === 'string' && { rate: ctx.values.rate }),
    };
    const settings = loadSettings(ctx.settingsOptions, ctx.env, { requireApiUrl: false });
    const daemon = new DaemonApi(settings);
    const reply = await daemon.request('POST', `/v1/inputs/${encodeURIComponent(channel)}/${encodeURIComponent(index)}`, { ...req, source: 'cli' }, 30_000);
    let id: string;
    let via: 'daemon' | 'queue';
    if (reply !== undefined) {
      // An input the profile has not, a malformed timecode: the person's to fix (64), as without a daemon.
      if (reply.status !== 202) throw refusal(reply, `POST /v1/inputs/${channel}/${index}`);
      if (!isDaemonPress(reply.body)) throw new AgentError('protocol', `the daemon's answer to the press is not what this agent sends (${daemon.socket})`);
      id = reply.body.press.id;
      via = 'daemon';
    } else {
      const profile = selectProfile(loadProfiles(settings.profilesDir, settings.sources.profilesDir), settings.firmwareVersion, settings.sources.firmwareVersion ?? 'default');
      id = await withQueueLocks(settings, daemon.socket, 'write its queue', async (clock) => {
        const bootId = await readBootId();
        let payload;
        try {
          payload = makePress(profile, channel, index, req, { mono: clock.now(), boot: bootId, wall: clock.wallNow() }, 'cli');
        } catch (err) {
          if (err instanceof PressRefused) throw usageError(`press: ${err.message}; nothing was queued`);
          throw err;
        }
        const source = `<state-dir>/queue, the state dir from ${settings.sources.stateDir ?? 'default'}`;
        return putInQueue(queueDirOf(settings.stateDir), PRESS_KIND, payload, { clock, bootId, capBytes: settings.queueMaxBytes, priority: PRESS_PRIORITY, source });
      });
      via = 'queue';
    }
    if (ctx.json) printJson({ ok: true, exitCode: EXIT.ok, via, press: { id, channel, index: Number(index), state: 'queued' } });
    else printLine(`press of ${quote(channel)} input ${index}: queued (item ${id}); ${via === 'daemon' ? 'the daemon sends it' : 'no daemon runs: the next `c2c-agent run` sends it, with the seconds it waited'}`);
    return EXIT.ok;
  } catch (err) {
    return fail(err, { json: ctx.json });
  }
}
