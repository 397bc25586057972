// The story, step by step, on the agent's clock (minutes are agent minutes;
// each step's time is a share of --minutes). What the person does (plugs a
// channel, the camera writes clips, revokes and pairs again) and what the
// network does (an outage, injected faults) happen here; the agents only
// react. Clip sizes and names come from the seeded random source.

import { bytes } from './report.mjs';

/** Faults besides the outage, added at the start and cleared when the story ends. */
export const FAULTS = {
  none: [],
  light: [{ kind: 'status', status: 503, path: '/v2/devices/heartbeat', fraction: 0.05 }],
  heavy: [
    { kind: 'status', status: 503, path: '/v2/devices/*', fraction: 0.15 },
    { kind: 'rate-limit', path: '/v2/devices/*', fraction: 0.05, retryAfter: '20' },
    // A stall past the agent's 30 s cut-off: the request is processed, the answer never comes in time.
    { kind: 'delay', path: '/v2/devices/heartbeat', fraction: 0.05, delayMs: 45_000 },
    // An answer cut mid-body (the connection drops): the agent must read it as a network failure and retry.
    { kind: 'truncated', path: '/v2/devices/me', fraction: 0.2 },
    { kind: 'reset', path: '/_storage/*', fraction: 0.15 },
    { kind: 'status', status: 500, path: '/v2/devices/assets', fraction: 0.2 },
  ],
};

/** After the story, how long (agent ms) the agents get to finish queued work before the verdict. */
export const DRAIN_LIMIT_MS = 15 * 60_000;
/** Waiting for a revoked device to notice, at most (agent ms): a heartbeat (at most 255 s) then a refused refresh. */
const NOTICE_LIMIT_MS = 8 * 60_000;
const MIB = 1024 * 1024;

export class Story {
  constructor({ options, cloud, devices, monitor, progress, random, pairAgain, signal }) {
    Object.assign(this, { options, cloud, devices, monitor, progress, random, pairAgain, signal });
    this.totalMs = options.minutes * 60_000;
    this.clipCount = 0;
  }

  say(text) {
    this.progress.line(this.monitor.now(), text);
  }

  /** Real-time sleep until the story clock reads `ms`; rejects when the run is cancelled. */
  until(ms) {
    const wait = Math.max(0, (ms - this.monitor.now()) / this.options.timeScale);
    return new Promise((resolve, reject) => {
      if (this.signal.aborted) return reject(this.signal.reason);
      const timer = setTimeout(() => {
        this.signal.removeEventListener('abort', onAbort);
        resolve();
      }, wait);
      const onAbort = () => {
        clearTimeout(timer);
        reject(this.signal.reason);
      };
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  at(share) {
    return this.until(share * this.totalMs);
  }

  /** Clips of 64 KiB to 8 MiB: those over 5 MiB go as two presigned parts. */
  clips(n) {
    for (const d of this.devices) {
      const made = [];
      for (let i = 0; i < n; i++) {
        const big = this.random() < 0.3;
        const size = Math.floor(big ? (5 + this.random() * 3) * MIB : (0.0625 + this.random() * 2) * MIB);
        const name = `clip-${String(++this.clipCount).padStart(3, '0')}.mp4`;
        d.dropClip(name, size, this.random);
        made.push(`${name} (${bytes(size)})`);
      }
      this.say(`${d.label}: the camera finished ${made.join(', ')} (written as .part, then renamed)`);
    }
  }

  plug(key, on) {
    for (const d of this.devices) on ? d.plug(key) : d.unplug(key);
    this.say(`hardware: ${key} channel ${on ? 'plugged in' : 'unplugged'} on ${this.devices.length === 1 ? this.devices[0].label : 'every camera'}`);
  }

  async run() {
    const faults = FAULTS[this.options.faults];
    for (const f of faults) await this.cloud.addFault(f);
    if (faults.length > 0) this.say(`faults (${this.options.faults}): ${faults.map(describeFault).join('; ')}`);

    await this.at(0.06);
    this.plug('proxy', true);
    await this.at(0.1);
    this.clips(2);
    await this.at(0.2);
    this.plug('proxy', false);
    this.clips(1);
    if (this.options.faults !== 'none') await this.outage(0.3, 0.5);
    else {
      await this.at(0.4);
      this.goodTake(false);
    }
    await this.revokeAndPairAgain(0.6);
    await this.at(0.85);
    this.clips(1);
    await this.at(1);
    await this.cloud.clearFaults();
    if (faults.length > 0) this.say('faults cleared: the service answers normally from here on');
  }

  async outage(from, to) {
    await this.at(from);
    this.monitor.networkDown();
    await this.cloud.refuseConnections();
    this.say(`network outage for ${Math.round(((to - from) * this.totalMs) / 60_000)} agent minutes: the fake cloud refuses connections`);
    await this.at(from + (to - from) * 0.3);
    this.plug('proxy', true);
    this.clips(2);
    this.say('while offline: the channel change and the clips wait in each agent\'s outbox');
    await this.at(from + (to - from) * 0.4);
    this.goodTake(true);
    await this.at(to);
    await this.cloud.acceptConnections();
    this.monitor.networkUp();
    this.say('network back: the fake cloud accepts connections again');
  }

  /** The person revokes the first camera's authorization in the app, sees it ask for pairing, and pairs it again. */
  async revokeAndPairAgain(share) {
    await this.at(share);
    const d = this.devices[0];
    await this.cloud.revoke(d.deviceId);
    this.monitor.revoked.set(d.label, this.monitor.now());
    this.say(`the person revokes ${d.label}'s authorization (admin revoke: every token of ${d.name} is refused from now on)`);
    const deadline = this.monitor.now() + NOTICE_LIMIT_MS;
    while (this.state(d) !== 'needs-pairing' && this.monitor.now() < deadline) await this.until(this.monitor.now() + 5_000);
    if (this.state(d) !== 'needs-pairing') this.say(`${d.label} did not ask for pairing within ${NOTICE_LIMIT_MS / 60_000} agent minutes; pairing it again anyway`);
    else this.say(`${d.label} asks for pairing; the person runs \`c2c-agent pair\` on it (the fake approves the code itself)`);
    const code = await this.pairAgain(d);
    this.say(`${d.label}: pair exited with ${code}`);
  }

  /** The director presses "Good take" on every camera during a take (its gpio-keys button: a key-down on the camera's input device). */
  goodTake(offline) {
    const made = [];
    for (const d of this.devices) {
      try {
        d.pressGoodTake(this.monitor.now());
        made.push(d.label);
      } catch (err) {
        this.say(`${d.label}: the Good take button could not be pressed (${err.code ?? err.message})`);
      }
    }
    if (made.length > 0) this.say(`the director presses "Good take" on ${made.join(', ')} during the take${offline ? ' while the network is down: the press waits in the outbox with its timecode' : ''}`);
  }

  state(d) {
    return this.monitor.live.get(d.label).states.at(-1)?.state;
  }

}

export function describeFault(f) {
  const share = `${Math.round((f.fraction ?? 1) * 100)}%`;
  const what = f.kind === 'status' ? `${f.status}` : f.kind === 'delay' ? `answers held ${f.delayMs / 1000} s` : f.kind === 'rate-limit' ? `429 (Retry-After ${f.retryAfter})` : f.kind;
  return `${what} on ${share} of ${f.method ? `${f.method} ` : ''}${f.path}`;
}

/**
 * After the story: polls `settled` every 10 agent s until it holds (every
 * agent online with an empty queue, every clip stored, the service's
 * channels matching the hardware) or DRAIN_LIMIT_MS passed. True when settled.
 */
export async function drain(monitor, timeScale, settled) {
  const deadline = monitor.now() + DRAIN_LIMIT_MS;
  while (monitor.now() < deadline) {
    if (await settled()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10_000 / timeScale));
  }
  return settled();
}
