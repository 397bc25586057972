// kill -9 of the built daemon, for what only a process shows: a kill in the
// middle of a write (between a temp file's creation and its rename: the upload
// index, the credentials, the channel record), and what that leaves on flash
// for the next start. Every other kill runs the daemon
// in-process in agent time (test/e2e/: uploads-crash, uploads-resume,
// uploads-realtime, heartbeat, channels-crash, refresh-crash), where the rig's
// kill lands between two of the daemon's steps, never inside a write. Power
// cuts, which lose the page cache too: test/powercut/.
//
// A process because the moment is the kernel's: a kill aimed at a file
// appearing (inotify), not at a time, and judged by what the files say after.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStatus } from '../../agent/daemon/runtime/status-file.js';
import { cloudFetch, daemonState, status, waitFor } from './agent-process.js';
import { CONNECT_PATH, cli, indexesAtService, plug, serviceChannels, startChannelAgent, tempFiles, useChannelRigs } from './channels-harness.js';
import { useCrashSuite } from './crash-suite.js';
import { seeded } from '../support/seeded.js';
import { soakSeed } from '../support/soak.js';
import { TOKEN_PATH, credentialTemps, journalQuiet, readCredentials, repair, sleepReal, startRefreshingAgent, writeClientSecret, writeCredentials, type RefreshingAgent } from './refresh-harness.js';
import { completeNamed, startUploadAgent, waitForUploads, writeMedia, useUploadRigs } from './uploads-harness.js';

const SCALE = 60;
const { rigUp, online } = useUploadRigs(SCALE);
const suite = useCrashSuite();
const channelRigAt = useChannelRigs();
/** The channel rig's scale: the debounce (5 agent s) is 17 real ms. */
const CHANNEL_SCALE = 300;
/** conf's temp file of the channel record (`channels.json.tmp-<10 digits><6 hex>`). */
const CONF_TEMP = /(^|\/)channels\.json\.tmp-\d{10}[0-9a-f]{6}$/;

/** 120 agent-s tokens at scale 300: a refresh every 60-90 agent s, 0.2-0.3 real s. */
const REFRESH_SCALE = 300;
const LIFETIME_S = 120;
/** Kills aimed at the credentials' write (each a refresh, about 0.3 real s). */
const WRITE_KILLS = 6;

async function kill9(a: RefreshingAgent): Promise<void> {
  a.child.kill('SIGKILL');
  await a.exited;
}

describe('kill -9 in the middle of a write', () => {
  // A kill while the upload index is being written leaves `<state-dir>/.uploaded.json.<hex>.tmp`
  // behind; the next start must remove it (it used to stay on flash for good, one file per such crash).
  it('no temp file of the upload index is left on flash after a kill during its write', async () => {
    const rig = await rigUp();
    mkdirSync(rig.dirs.stateDir, { recursive: true });
    const index = join(rig.dirs.stateDir, 'uploaded.json');
    for (let round = 0; round < 3; round++) {
      const agent = startUploadAgent(rig);
      await online(rig, agent);
      // SIGKILL the moment the index's temp file appears (inotify), before its rename.
      let exited = false;
      void agent.exited.then(() => (exited = true));
      const w = watch(rig.dirs.stateDir, (_t, name) => {
        if (typeof name === 'string' && /^\.uploaded\.json\..+\.tmp$/.test(name)) agent.child.kill('SIGKILL');
      });
      const name = `indexed-${round}.mp4`;
      writeMedia(join(rig.media, name), 1000, 3600_000);
      // Killed, or (the watch too late) the index written with the clip in it: either way this round is over.
      await waitFor('the kill or the index written', () => exited || (completeNamed(rig.cloud, name).length > 0 && existsSync(index) && readFileSync(index, 'utf8').includes(name)), 20_000);
      w.close();
      await kill9(agent);
    }
    const last = startUploadAgent(rig);
    await online(rig, last);
    await waitForUploads(rig, 'the queue empty', (c) => c.pending === 0, 20_000);
    expect(readdirSync(rig.dirs.stateDir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  }, 60_000);

  // A refresh token is single use, so the credentials file must always hold a pair that parses, and a
  // pair the service still honours, except in the one documented case (the refresh was answered but
  // the new pair never reached the file: a lost answer), where the restarted daemon must say it needs
  // pairing. Each kill is aimed 0-8 real ms after a refresh reached the fake: the new pair on its way
  // to flash, the temp file written, fsynced, renamed. Random kills through refreshes, and the exact
  // lost answer, run in agent time: e2e/refresh-crash.test.ts.
  it(`never tears the credentials file, through ${WRITE_KILLS} kills aimed at its write`, async () => {
    const t0 = Date.now();
    const seed = soakSeed();
    const random = seeded(seed);
    const c = await suite.cloud({ timeScale: REFRESH_SCALE, tokenLifetimeSeconds: LIFETIME_S });
    const d = suite.dirs();
    const device = c.devices[0]!;
    const secretFile = writeClientSecret(d, c.clientSecret);
    writeCredentials(d, device, LIFETIME_S);
    // A temp file a writer killed long ago left behind: the first start must sweep it.
    const planted = join(d.stateDir, '.credentials.json.0123456789ab.tmp');
    writeFileSync(planted, '{"access_token":"fca_planted"}', { mode: 0o600 });
    const old = new Date(Date.now() - 5 * 60_000);
    utimesSync(planted, old, old);

    const tokenCalls = () => c.journal.filter((e) => e.method === 'POST' && e.path === TOKEN_PATH).length;
    const stats = { kills: 0, lostAnswers: 0, tempsLeft: 0, repairs: 0 };
    /** Temp files the test aged past a minute, to be swept by the next start. */
    const aged = new Set<string>([planted.slice(d.stateDir.length + 1)]);
    let journalAtStart = 0;
    const made = () => c.journal.length > journalAtStart;
    const start = (): RefreshingAgent => {
      journalAtStart = c.journal.length;
      return startRefreshingAgent({ cloud: c, device, dirs: d, timeScale: REFRESH_SCALE, secretFile });
    };
    const kill9Alive = async (a: RefreshingAgent): Promise<void> => {
      a.child.kill('SIGKILL');
      const how = await a.exited;
      if (how.signal !== 'SIGKILL') throw new Error(`the daemon had exited by itself (${JSON.stringify(how)}):\n${a.all()}`);
    };

    while (stats.kills < WRITE_KILLS) {
      const agent = start();
      // Aimed at the write window: the moment the fake sees a refresh, plus 0-8 real ms. A real-time
      // wait on purpose: the window is the kernel's (the answer's way back, a write, an fsync, a rename).
      const seen = tokenCalls();
      await waitFor('a refresh', () => tokenCalls() > seen || agent.child.exitCode !== null, 20_000, 1);
      await sleepReal(random() * 8);
      await kill9Alive(agent);
      stats.kills++;
      // Whatever the dead process had sent has reached the fake.
      await journalQuiet(c);

      // The file: present, whole, both tokens.
      const file = readCredentials(d);
      expect(typeof file.access_token).toBe('string');
      expect(typeof file.refresh_token).toBe('string');
      // Its access token is one the fake issued and did not revoke (expired is fine).
      expect(['valid', 'expired']).toContain(c.tokenState(String(file.access_token)));
      // Temp files with secrets (a kill between open and rename leaves one): each found is aged past
      // the minute the sweep waits, so the next daemon that gets as far as a request must remove it.
      const present = credentialTemps(d);
      if (made()) {
        expect(present.filter((n) => aged.has(n))).toEqual([]);
        aged.clear();
        expect(present.length).toBeLessThanOrEqual(1);
      }
      stats.tempsLeft += present.filter((n) => !aged.has(n)).length;
      for (const name of present) {
        utimesSync(join(d.stateDir, name), old, old);
        aged.add(name);
      }

      const state = c.tokenState(String(file.refresh_token));
      if (state === 'valid') continue;
      // The one documented way to lose authorization: the new pair was issued but never stored.
      if (state !== 'used') throw new Error(`after kill ${stats.kills}, the stored refresh token is ${state} at the fake: ${JSON.stringify(stats)}`);
      stats.lostAnswers++;
      const again = start();
      // Waited for in status.json (no process a poll), then `status` asked once.
      await waitFor('needs-pairing', () => daemonState(d, again.pid) === 'needs-pairing', 15_000, 10);
      expect(await status(d, c.url, REFRESH_SCALE)).toMatchObject({ exitCode: 77, json: { state: 'needs-pairing' } });
      expect(again.all()).toContain('needs pairing: the service refused the refresh token');
      await kill9Alive(again);
      writeCredentials(d, await repair(c, device), LIFETIME_S);
      stats.repairs++;
    }
    // A start after the last kill sweeps what it left and goes online (a lost answer: re-paired first).
    if (c.tokenState(String(readCredentials(d).refresh_token)) === 'used') writeCredentials(d, await repair(c, device), LIFETIME_S);
    const last = start();
    // A bound against a hang, and what the daemon said if it is reached: at scale 300 a connect has
    // 33 real ms, so a loaded machine can hold it offline a while (seen once in a CI run).
    await waitFor('online, the temps swept', () => daemonState(d, last.pid) === 'online' && credentialTemps(d).length === 0, 60_000, 10).catch((err: unknown) => {
      throw new Error(`${String(err)}: state ${daemonState(d, last.pid)}, temps ${JSON.stringify(credentialTemps(d))}\n${last.all().slice(-3000)}`);
    });
    last.child.kill('SIGTERM');
    expect(await last.exited).toEqual({ code: 0, signal: null });
    console.log(JSON.stringify({ test: 'credentials write window', seed, ...stats, realS: (Date.now() - t0) / 1000 }));
    expect(existsSync(planted)).toBe(false);
  }, 120_000);
  // A kill while the channel record is written through conf (atomically's `channels.json.tmp-<n>`,
  // between its creation and the rename) leaves the temp in the state dir; the next start must remove
  // it (it used to stay on flash for good, one file per such kill). The service loses the video
  // channel before each start, so each daemon connects it and writes the record right after the
  // answer; the kill lands 0.5 to 3 real ms after that answer.
  it('a kill while the channel record is written leaves no channels.json.tmp-* behind for long: the next start removes it', async () => {
    const rig = await channelRigAt(CHANNEL_SCALE);
    const c = rig.cloud;
    const state = rig.dirs.stateDir;
    const random = seeded(soakSeed());
    // What an earlier such kill left (named as atomically names it), five minutes ago.
    const planted = join(state, `channels.json.tmp-${String(Date.now() - 300_000).slice(-10)}a1b2c3`);
    writeFileSync(planted, '{"channels":{}}', { mode: 0o600 });
    const old = new Date(Date.now() - 300_000);
    utimesSync(planted, old, old);

    plug(rig, 'video');
    const answered = (): number => c.journal.filter((e) => e.method === 'POST' && e.path === CONNECT_PATH && e.status === 200).length;
    let tries = 0;
    let leaked = 0;
    // Until a real kill has left a temp behind (about one try in six; the planted one is there from
    // the start): one is what the next start's sweep needs, each try is a daemon's start (issue 28).
    while (tries < 40 && leaked < 1) {
      tries++;
      for (const ch of serviceChannels(rig)) {
        await cloudFetch(`${c.url}${CONNECT_PATH}/${ch.id}/disconnect`, { method: 'POST', headers: { authorization: `Bearer ${rig.device.accessToken}` } });
      }
      const before = tempFiles(state).filter((n) => CONF_TEMP.test(n)).length;
      const agent = startChannelAgent(rig);
      const seen = answered();
      await waitFor('a connect answered', () => answered() > seen || agent.child.exitCode !== null, 5_000, 0).catch(() => undefined);
      const until = performance.now() + 0.5 + random() * 2.5;
      while (performance.now() < until) {
        // spin: a timer could not aim within the millisecond the write takes (a real-time aim on purpose: the window is the kernel's)
      }
      agent.child.kill('SIGKILL');
      await agent.exited;
      if (tempFiles(state).filter((n) => CONF_TEMP.test(n)).length > before) leaked++;
    }

    // A daemon then runs through a whole start and a finished sync, and stops cleanly.
    const last = startChannelAgent(rig);
    await waitFor('the video channel', () => JSON.stringify(indexesAtService(rig)) === '[0]', 10_000);
    // No sync pending: waited for in status.json, then `status` asked (its end record may still be on its way to the file).
    await waitFor('no sync pending', () => {
      const r = readStatus(rig.dirs.runtimeDir);
      return r.kind === 'ok' && r.doc.pid === last.pid && (r.doc as { channels?: { pendingSyncs?: number } }).channels?.pendingSyncs === 0;
    }, 10_000, 10);
    await waitFor('`status` says no sync pending', async () => ((await cli(rig, ['status']).catch(() => undefined))?.json.channels as { pendingSyncs?: number } | undefined)?.pendingSyncs === 0, 10_000, 100);
    last.child.kill('SIGTERM');
    expect(await last.exited).toEqual({ code: 0, signal: null });
    const left = tempFiles(state);
    console.log(JSON.stringify({ test: 'channel record temps', tries, leakedByRealKills: leaked, left }));
    expect(left).toEqual([]);
  }, 120_000);
});
