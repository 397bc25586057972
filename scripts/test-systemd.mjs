// test:systemd: the agent under a real systemd (PID 1 in a podman container
// booted from a debootstrapped Debian), installed and removed for real from
// the .deb and with scripts/install.sh, paired against the fake cloud
// running in the same container. One PASS or FAIL line per check; one SKIP
// line, exit 0, where podman cannot run.
//
//   npm run test:systemd            (C2C_DEBIAN_MIRROR=... to use another mirror)
//
// For the watchdog check a drop-in lowers WatchdogSec from 120 s to 10 s
// (real time); nothing else in the unit is changed. The client secret is
// encrypted with systemd-creds inside the container, the token-key is the
// one the package made, and the fake issues 30 s tokens, so the credentials
// file is written by pairing and by several refreshes under the real unit
// (docs/packaging.md, "Secrets at rest"). Then the container files are
// built and run on the same base image (container-checks.mjs).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Machine, baseImage, buildNodeDeb, ensureBaseImage, whyNot } from './systemd-rig.mjs';
import { containerChecks } from './container-checks.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const UNIT = 'c2c-agent.service';
const TEST_WATCHDOG_SEC = 10;
const CLIENT_SECRET = 'test-systemd-client-secret';
/** The fake's token lifetime, real seconds: a refresh every 15 to 22 s while the checks run. */
const TOKEN_LIFETIME_S = 30;
const CREDSTORE = '/etc/credstore.encrypted';
const TOKEN_KEY_CRED = `${CREDSTORE}/c2c-agent.token-key`;
const SECRET_CRED = `${CREDSTORE}/c2c-agent.client-secret`;
/** What the fake's access and refresh tokens start with (test/fake-cloud/state.ts secret()). */
const TOKEN_IN_CLEAR = 'fc[ar]_';
const started = Date.now();
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
const log = (line) => process.stdout.write(`${line}\n`);
let failures = 0;

function check(name, ok, detail) {
  if (!ok) failures++;
  log(`${ok ? 'PASS' : 'FAIL'}  ${name}: ${detail}`);
  return ok;
}

async function waitFor(what, probe, timeoutMs) {
  const t0 = Date.now();
  for (;;) {
    const v = probe();
    if (v) return { value: v, ms: Date.now() - t0 };
    if (Date.now() - t0 > timeoutMs) return { value: undefined, ms: Date.now() - t0, what };
    await new Promise((r) => setTimeout(r, 250));
  }
}

const reason = whyNot();
if (reason !== undefined) {
  // npm test installs podman first (scripts/system-tools.mjs); a machine where it still cannot
  // run is told so, and under CI that is a failure: a green CI must have booted the unit.
  log(`SKIP  test:systemd: ${reason}`);
  process.exit(process.env.CI === 'true' ? 69 : 0);
}

const work = mkdtempSync(path.join(tmpdir(), 'c2c-systemd-'));
const machine = new Machine(`c2c-systemd-${process.pid}`);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    machine.remove();
    rmSync(work, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}
try {
  const tImage = Date.now();
  const how = ensureBaseImage((l) => log(`      ${l}`));
  log(`      base image ready in ${secs(Date.now() - tImage)} (${how})`);
  const agentDeb = execFileSync(process.execPath, [path.join(root, 'scripts/package-deb.mjs'), '--out', work], { encoding: 'utf8' }).trim().split(' ')[0];
  const nodeDeb = buildNodeDeb(work);

  const tBoot = Date.now();
  const state = machine.boot();
  check('boot', state === 'running' || state === 'degraded', `systemd is PID 1, system ${state} after ${secs(Date.now() - tBoot)}`);
  machine.copyIn(path.resolve(agentDeb), '/root/c2c-agent.deb');
  machine.copyIn(nodeDeb, '/root/nodejs.deb');
  machine.copyIn(path.join(root, 'dist/fake-cloud.mjs'), '/root/fake-cloud.mjs');

  // 1. The package, with no config yet: installed and enabled, not started.
  const inst = machine.sh('dpkg -i /root/nodejs.deb /root/c2c-agent.deb 2>&1');
  const enabled = machine.sh(`systemctl is-enabled ${UNIT}`).stdout.trim();
  const active = machine.sh(`systemctl is-active ${UNIT}`).stdout.trim();
  const user = machine.sh('id -u c2c-agent').status === 0;
  check('dpkg -i', inst.status === 0 && enabled === 'enabled' && active === 'inactive' && user,
    `exit ${inst.status}, unit ${enabled} and ${active} (no apiUrl yet), user c2c-agent ${user ? 'created' : 'MISSING'}; postinst said: ${lastLine(inst.out)}`);
  const keyMode = machine.sh(`stat -c %a ${TOKEN_KEY_CRED}`).stdout.trim();
  const keyBytes = machine.sh(`systemd-creds decrypt --name=token-key ${TOKEN_KEY_CRED} - | wc -c`).stdout.trim();
  check('token-key', keyMode === '600' && keyBytes === '32', `postinst made ${TOKEN_KEY_CRED} (mode ${keyMode || 'MISSING'}), which systemd-creds decrypts to ${keyBytes || '?'} bytes`);

  // 2. The fake cloud next to it, approving pairing codes after 1 s.
  machine.sh(`systemd-run --unit c2c-fake-cloud node /root/fake-cloud.mjs --plain-http --port 8080 --admin-port 8081 --devices 0 --auto-approve 1 --token-lifetime ${TOKEN_LIFETIME_S} --client-secret ${CLIENT_SECRET}`);
  const cloud = await waitFor('fake cloud', () => {
    const line = machine.sh('journalctl -u c2c-fake-cloud -o cat | grep -m1 adminUrl').stdout.trim();
    return line ? JSON.parse(line) : undefined;
  }, 20_000);
  if (!check('fake cloud', cloud.value !== undefined, cloud.value ? `listening on ${cloud.value.url}` : 'no start line within 20 s')) throw new Error('no fake cloud');
  const { url, adminUrl } = cloud.value;

  // 3. Configure as docs/packaging.md says (the client secret encrypted, never on disk in clear), with the test's shorter watchdog.
  const encrypt = machine.sh(`printf '%s' '${CLIENT_SECRET}' | systemd-creds encrypt --name=client-secret - ${SECRET_CRED}`);
  check('client secret encrypted', encrypt.status === 0 && machine.sh(`grep -c '${CLIENT_SECRET}' ${SECRET_CRED}`).stdout.trim() === '0',
    `systemd-creds encrypt exit ${encrypt.status}; ${SECRET_CRED} holds no clear text; no clientSecretFile in the config`);
  machine.sh([
    `printf '{"apiUrl": "${url}"}\\n' > /etc/c2c-agent/config.json`,
    `mkdir -p /etc/systemd/system/${UNIT}.d`,
    `printf '[Service]\\nWatchdogSec=${TEST_WATCHDOG_SEC}s\\n' > /etc/systemd/system/${UNIT}.d/test-watchdog.conf`,
    'systemctl daemon-reload',
  ].join(' && '));

  // 4. Start: Type=notify, so `systemctl start` returns once READY=1 arrived.
  const tStart = Date.now();
  const start = machine.sh(`systemctl start ${UNIT}`);
  const s1 = machine.show(UNIT, ['ActiveState', 'SubState', 'MainPID', 'StatusText']);
  check('READY', start.status === 0 && s1.ActiveState === 'active', `systemctl start returned ${start.status} after ${secs(Date.now() - tStart)}; ${s1.ActiveState}/${s1.SubState}, MainPID ${s1.MainPID}`);
  check('STATUS= (unpaired)', /needs pairing/.test(statusLine()), statusLine());

  // 5. Pair as the README says; the running daemon pairs itself through its local API and uses the credentials at once.
  const pair = machine.sh('runuser -u c2c-agent -- c2c-agent pair --json --timeout 60', { timeoutMs: 90_000 });
  const paired = pair.stdout.trim().split('\n').map((l) => safeJson(l)).find((e) => e?.event === 'paired');
  check('pair', pair.status === 0 && paired !== undefined, `exit ${pair.status}, device ${paired?.device?.id ?? '?'}, daemon ${paired?.daemon ?? '?'}`);
  const deviceId = paired?.device?.id;

  // 6. Heartbeats reach the fake cloud, and STATUS= says so.
  const beat = await waitFor('heartbeat', () => {
    const r = deviceId && machine.admin(adminUrl, `/referee/${deviceId}`);
    return r && r.successfulHeartbeats >= 1 ? r : undefined;
  }, 30_000);
  check('heartbeat', beat.value !== undefined, beat.value
    ? `${beat.value.successfulHeartbeats} accepted by the fake cloud ${secs(beat.ms)} after pairing, ${beat.value.tooSoon + beat.value.tooLate} spacing violations`
    : 'none within 30 s');
  const online = await waitFor('online', () => (/^online/.test(statusLine()) ? statusLine() : undefined), 10_000);
  check('STATUS= (online)', online.value !== undefined, `systemctl status shows ${online.value ?? statusLine()}`);

  // 6b. Commands from a shell read the encrypted file through the running unit's credentials.
  const asRoot = machine.sh('c2c-agent check');
  const asAgent = machine.sh('runuser -u c2c-agent -- c2c-agent check');
  check('check from a shell', asRoot.status === 0 && asAgent.status === 0, `root: exit ${asRoot.status}, c2c-agent: exit ${asAgent.status} (${lastLine(asAgent.out)})`);

  // 7. A hung agent: SIGSTOP, the watchdog kills it, Restart= brings it back.
  const before = machine.show(UNIT, ['MainPID', 'NRestarts']);
  const tStop = Date.now();
  machine.sh(`kill -STOP ${before.MainPID}`);
  // Waited for inside the container (one exec for the whole wait), then read once.
  const restartWaitMs = (TEST_WATCHDOG_SEC + 10 + 30) * 1000;
  const restarted = machine.waitInside(
    `[ "$(systemctl show ${UNIT} -p ActiveState --value)" = active ] && pid=$(systemctl show ${UNIT} -p MainPID --value) && [ "$pid" != 0 ] && [ "$pid" != ${Number(before.MainPID)} ]`,
    restartWaitMs,
  );
  const after = machine.show(UNIT, ['MainPID', 'NRestarts', 'ActiveState']);
  const back = { value: restarted && after.ActiveState === 'active' && after.MainPID !== before.MainPID && after.MainPID !== '0' ? after : undefined, ms: Date.now() - tStop };
  const wdLog = machine.sh(`journalctl -u ${UNIT} -o cat | grep -m1 -i 'watchdog timeout'`).stdout.trim();
  const killLog = machine.sh(`journalctl -u ${UNIT} -o cat | grep -i 'killing process\\|timed out'`).stdout.trim().split('\n').join('; ');
  // A stopped process keeps systemd's SIGABRT pending, so it goes only with
  // the SIGKILL after TimeoutStopSec (10 s); a wedged but running loop would
  // die of the SIGABRT at once.
  check('watchdog', back.value !== undefined && wdLog !== '', back.value
    ? `pid ${before.MainPID} stopped; "${wdLog}"; then "${killLog}"; pid ${back.value.MainPID} READY ${secs(Date.now() - tStop)} after SIGSTOP (WatchdogSec=${TEST_WATCHDOG_SEC}s, SIGKILL after TimeoutStopSec=10s, RestartSec=10s), NRestarts ${before.NRestarts} -> ${back.value.NRestarts}`
    : `no restart within ${secs(back.ms)}; journal: ${wdLog || 'no watchdog line'}`);

  // 7b. Secrets at rest: after pairing and refreshes (and the restart above), the state dir holds the envelope and no token.
  const refreshCount = () => Number(machine.sh(`journalctl -u ${UNIT} -o cat | grep -c '"access token refreshed"'`).stdout.trim());
  machine.waitInside(`[ "$(journalctl -u ${UNIT} -o cat | grep -c '"access token refreshed"')" -ge 2 ]`, 60_000);
  const refreshes = refreshCount();
  const refreshed = { value: refreshes >= 2 ? refreshes : undefined };
  const clearFiles = machine.sh(`grep -rlaE '${TOKEN_IN_CLEAR}' /var/lib/c2c-agent`).stdout.trim();
  const sealed = machine.sh('head -c 48 /var/lib/c2c-agent/credentials.json').stdout;
  check('no token in clear', refreshed.value !== undefined && clearFiles === '' && sealed.startsWith('{"format":"c2c-agent-credentials-encrypted"'),
    `${refreshed.value ?? 'fewer than 2'} refreshes since pairing; credentials.json starts ${JSON.stringify(sealed.slice(0, 48))}; files under /var/lib/c2c-agent with a token in clear: ${clearFiles === '' ? 'none' : clearFiles.split('\n').join(', ')}`);

  // 7c. A restart reads the encrypted credentials back and goes on: the new process verifies the
  // token it decrypted (GET /v2/devices/me) and is online. Not a new heartbeat within the wait: the
  // 60 s rule and the jitter may put it minutes after a heartbeat just before the restart.
  const beatsBefore = machine.admin(adminUrl, `/referee/${deviceId}`).successfulHeartbeats;
  const needsPairing = () => Number(machine.sh(`journalctl -u ${UNIT} -o cat | grep -c -- '-> needs-pairing'`).stdout.trim());
  const needsPairingBefore = needsPairing();
  const pidBefore = machine.show(UNIT, ['MainPID']).MainPID;
  const restart = machine.sh(`systemctl restart ${UNIT}`);
  const again = await waitFor('online after the restart', () => {
    const pid = machine.show(UNIT, ['MainPID']).MainPID;
    return pid !== pidBefore && pid !== '0' && /^online/.test(statusLine()) ? machine.admin(adminUrl, `/referee/${deviceId}`) : undefined;
  }, 30_000);
  const needsPairingAfter = needsPairing();
  check('restart', restart.status === 0 && again.value !== undefined && needsPairingAfter === needsPairingBefore, again.value
    ? `systemctl restart; a new process online (its token verified) after ${secs(again.ms)} (${beatsBefore} -> ${again.value.successfulHeartbeats} heartbeats so far); needs-pairing since: ${needsPairingAfter - needsPairingBefore}`
    : `no new process online within ${secs(again.ms)}: ${statusLine()}`);

  // The code cache in CacheDirectory= (agent/daemon/boot.ts): written by the first start once its first
  // heartbeat went, used by the restarted one, which writes none (one "wrote" line in the journal, one file).
  const cacheFiles = machine.sh("find /var/cache/c2c-agent -maxdepth 1 -name '*.v8cache' -user c2c-agent -perm 0600").stdout.trim().split('\n').filter(Boolean);
  const wrote = Number(machine.sh(`journalctl -u ${UNIT} -o cat | grep -c 'wrote the code cache'`).stdout.trim());
  check('code cache', cacheFiles.length === 1 && wrote === 1, `/var/cache/c2c-agent: ${cacheFiles.length} cache file(s) of the agent's user, 0600; "wrote the code cache" in the journal ${wrote} time(s) over two starts`);

  // 8. systemd-analyze security on the running unit.
  const sec = machine.sh(`SYSTEMD_COLORS=0 systemd-analyze security ${UNIT}`);
  const score = /Overall exposure level for \S+: (\d+(?:\.\d+)?) (\S+)/.exec(sec.stdout);
  check('security', score !== null && Number(score[1]) <= 3.0, score ? `systemd-analyze security ${UNIT}: ${score[1]} ${score[2]}` : lastLine(sec.out));

  // 9. A clean, quick stop. Timed on systemd's own monotonic clock, from the unit leaving
  // "active" (the stop job's SIGTERM) to its entering "inactive" (the process gone): the
  // agent's part alone, without the container's exec around `systemctl stop` (docs/testing.md, run 46).
  // The timestamps must be this stop's: the unit active before it, and each transition after the last.
  const t = (v) => Number(v || 0);
  const beforeStop = machine.show(UNIT, ['ActiveState', 'ActiveEnterTimestampMonotonic']);
  const tHalt = Date.now();
  const stop = machine.sh(`systemctl stop ${UNIT}`);
  const wallMs = Date.now() - tHalt;
  const s2 = machine.show(UNIT, ['ActiveState', 'Result', 'ExecMainStatus', 'ActiveExitTimestampMonotonic', 'InactiveEnterTimestampMonotonic']);
  const thisStop = beforeStop.ActiveState === 'active' && t(s2.ActiveExitTimestampMonotonic) > t(beforeStop.ActiveEnterTimestampMonotonic) && t(s2.InactiveEnterTimestampMonotonic) >= t(s2.ActiveExitTimestampMonotonic) && t(beforeStop.ActiveEnterTimestampMonotonic) > 0;
  const haltMs = (t(s2.InactiveEnterTimestampMonotonic) - t(s2.ActiveExitTimestampMonotonic)) / 1000;
  check('stop', stop.status === 0 && s2.Result === 'success' && s2.ActiveState === 'inactive' && thisStop && haltMs < 5000,
    thisStop
      ? `the stop took ${Math.round(haltMs)} ms by systemd's clock (active -> inactive; ${secs(wallMs)} around systemctl stop); Result=${s2.Result}, exit status ${s2.ExecMainStatus}, ${s2.ActiveState}`
      : `no timestamps of this stop: before it ${beforeStop.ActiveState} since ${beforeStop.ActiveEnterTimestampMonotonic}, after it left active at ${s2.ActiveExitTimestampMonotonic}, inactive at ${s2.InactiveEnterTimestampMonotonic}; ${s2.ActiveState}`);

  // 9b. With the unit stopped a shell has no token-key: one line and 77, and what docs/packaging.md says to run instead works.
  const locked = machine.sh('runuser -u c2c-agent -- c2c-agent check');
  const lockedLines = locked.stderr.trim().split('\n');
  const viaRun = machine.sh(`systemd-run --pipe --wait --quiet -p User=c2c-agent -p LoadCredentialEncrypted=token-key:c2c-agent.token-key -p LoadCredentialEncrypted=client-secret:c2c-agent.client-secret c2c-agent check`);
  check('check, unit stopped', locked.status === 77 && lockedLines.length === 1 && /no token-key/.test(locked.stderr) && viaRun.status === 0,
    `from a shell: exit ${locked.status}, "${lockedLines[0]}"; through systemd-run with the unit's credentials: exit ${viaRun.status}`);

  // 10. Remove keeps the credentials; purge deletes them.
  const rm = machine.sh('dpkg -r c2c-agent 2>&1');
  const kept = machine.sh(`test -f /var/lib/c2c-agent/credentials.json && test -f /etc/c2c-agent/config.json && test -f ${TOKEN_KEY_CRED} && test -f ${SECRET_CRED}`).status === 0;
  const gone = machine.sh('test ! -e /opt/c2c-agent && test ! -e /usr/lib/systemd/system/c2c-agent.service').status === 0;
  const afterRemove = machine.sh(`systemctl is-active ${UNIT}`).stdout.trim();
  check('dpkg -r', rm.status === 0 && kept && gone && afterRemove !== 'active',
    `exit ${rm.status}; daemon ${afterRemove}; program and unit ${gone ? 'gone' : 'STILL THERE'}; credentials, config and encrypted keys ${kept ? 'kept' : 'LOST'}`);
  const purge = machine.sh('dpkg -P c2c-agent 2>&1');
  const clean = machine.sh(`test ! -e /var/lib/c2c-agent && test ! -e /var/cache/c2c-agent && test ! -e /etc/c2c-agent && test ! -e /run/c2c-agent && test ! -e ${CREDSTORE}`).status === 0;
  check('dpkg -P', purge.status === 0 && clean, `exit ${purge.status}; state, runtime and config dirs and the encrypted keys ${clean ? 'removed' : 'STILL THERE'}`);

  // 11. The same with scripts/install.sh, twice, then --uninstall [--purge].
  installScriptChecks(url);

  // 12. The Dockerfiles and the compose file's agents, on the same base.
  machine.remove();
  await containerChecks({ root, baseImage, check });
} catch (err) {
  check('run', false, err instanceof Error ? err.message : String(err));
} finally {
  machine.remove();
  rmSync(work, { recursive: true, force: true });
}
log(`${failures === 0 ? 'all checks passed' : `${failures} check(s) failed`} in ${secs(Date.now() - started)}`);
process.exit(failures === 0 ? 0 : 1);

function installScriptChecks(url) {
  const src = '/root/c2c-agent-src';
  machine.sh(`mkdir -p ${src}/scripts`);
  for (const p of ['dist', 'firmware-profiles', 'systemd', 'packaging']) machine.copyIn(path.join(root, p), `${src}/${p}`);
  machine.copyIn(path.join(root, 'scripts/install.sh'), `${src}/scripts/install.sh`);
  const listing = `find /opt/c2c-agent /etc/c2c-agent /etc/systemd/system/${UNIT} /usr/lib/sysusers.d/c2c-agent.conf /usr/local/bin/c2c-agent /var/lib/c2c-agent ${CREDSTORE} -printf '%p %m %u\\n' | sort; md5sum /opt/c2c-agent/dist/c2c-agent.mjs /etc/c2c-agent/config.json ${TOKEN_KEY_CRED}`;
  machine.sh(`mkdir -p /etc/c2c-agent && printf '{"apiUrl": "${url}"}\\n' > /etc/c2c-agent/config.json`);
  const first = machine.sh(`sh ${src}/scripts/install.sh`);
  const s1 = machine.show(UNIT, ['ActiveState', 'StatusText']);
  const layout1 = machine.sh(listing).stdout;
  check('install.sh', first.status === 0 && s1.ActiveState === 'active', `exit ${first.status}: ${lastLine(first.out)}; ${s1.ActiveState}, STATUS="${s1.StatusText}"`);
  const status = machine.sh('runuser -u c2c-agent -- c2c-agent status');
  check('status (needs pairing)', status.status === 77, `c2c-agent status exits ${status.status}: ${status.stdout.trim().split('\n')[0]}`);
  const second = machine.sh(`sh ${src}/scripts/install.sh`);
  const layout2 = machine.sh(listing).stdout;
  const s2 = machine.show(UNIT, ['ActiveState']);
  check('install.sh again', second.status === 0 && layout1 === layout2 && s2.ActiveState === 'active' && layout1.includes(TOKEN_KEY_CRED),
    `exit ${second.status}: ${lastLine(second.out)}; files, modes and owners ${layout1 === layout2 ? 'identical' : 'DIFFER'} (${layout1.split('\n').length - 4} paths, the token-key made once), ${s2.ActiveState}`);
  const un = machine.sh(`sh ${src}/scripts/install.sh --uninstall`);
  const keptState = machine.sh('test -d /var/lib/c2c-agent && test -f /etc/c2c-agent/config.json && test ! -e /opt/c2c-agent').status === 0;
  const inactive = machine.sh(`systemctl is-active ${UNIT}`).stdout.trim();
  check('install.sh --uninstall', un.status === 0 && keptState && inactive !== 'active', `exit ${un.status}: ${lastLine(un.out)}; ${inactive}`);
  const un2 = machine.sh(`sh ${src}/scripts/install.sh --uninstall --purge`);
  const purged = machine.sh(`test ! -e /var/lib/c2c-agent && test ! -e /etc/c2c-agent && test ! -e /etc/systemd/system/c2c-agent.service && test ! -e ${CREDSTORE}`).status === 0;
  check('install.sh --uninstall --purge', un2.status === 0 && purged, `exit ${un2.status}: ${lastLine(un2.out)}`);
}

function statusLine() {
  return /Status: "(.*)"/.exec(machine.sh(`SYSTEMD_COLORS=0 systemctl status --no-pager ${UNIT}`).stdout)?.[1] ?? '(no Status: line)';
}

function lastLine(text) {
  return text.trim().split('\n').at(-1) ?? '';
}

function safeJson(line) {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
