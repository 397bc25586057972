// What the simulator knows while the story runs, from both sides: the
// agents' state changes (their logs) and status files (runtime dirs), and
// the service's journal and assets (the fake's admin endpoint). All times
// are agent ms since the story began (the fake's clock minus its start).
export const HEARTBEAT_PATH = '/v2/devices/heartbeat';
/** A heartbeat still unanswered this long after it arrived (agent ms) is reported as such: the agent gave up on it long before. */
const UNANSWERED_AFTER_MS = 60_000;

export class Monitor {
  constructor({ cloud, devices, timeScale }) {
    this.cloud = cloud;
    this.devices = devices;
    this.timeScale = timeScale;
    /** Fake-clock ms at the story's start, and the real ms it was read at. */
    this.origin = 0;
    this.realOrigin = 0;
    this.byId = new Map();
    /** Per device label: { states: [{ t, state, reason }], heartbeats: [{ t, status }] }. */
    this.live = new Map(devices.map((d) => [d.label, { states: [], heartbeats: [], stored: 0 }]));
    /** Heartbeats not answered yet (a stalled answer), by key, and those already reported. */
    this.pendingHeartbeats = new Map();
    this.answered = new Set();
    this.journalSince = 0;
    this.network = { up: true, since: 0 };
    this.outages = [];
    /** Device label → story time its authorization was revoked. */
    this.revoked = new Map();
    this.assets = [];
  }

  async begin() {
    this.origin = await this.cloud.now();
    this.realOrigin = performance.now();
    this.journalSince = this.origin;
  }

  /** Story time now, in agent ms, from the real clock (no round trip). */
  now() {
    return (performance.now() - this.realOrigin) * this.timeScale;
  }

  know(device) {
    if (device.deviceId) this.byId.set(device.deviceId, device);
  }

  transition(device, { to, reason }) {
    this.live.get(device.label).states.push({ t: this.now(), state: to, reason });
  }

  networkDown() {
    this.network = { up: false, since: this.now() };
  }

  networkUp() {
    if (!this.network.up) this.outages.push({ from: this.network.since, to: this.now() });
    this.network = { up: true, since: this.now() };
  }

  /**
   * Reads the service's side since the last poll; calls `onHeartbeat(device,
   * attempt)` once per heartbeat, when it has been answered (status 0: reset,
   * or no answer within UNANSWERED_AFTER_MS).
   */
  async poll(onHeartbeat) {
    const entries = await this.cloud.journal(this.journalSince);
    let latest = this.journalSince;
    for (const e of entries) {
      latest = Math.max(latest, e.t);
      if (e.method !== 'POST' || e.path !== HEARTBEAT_PATH) continue;
      const device = this.byId.get(e.deviceId);
      const key = `${e.deviceId}@${e.t}`;
      if (!device || this.answered.has(key)) continue;
      const waiting = e.status === 0 && !(e.faults ?? []).includes('reset') && this.now() - (e.t - this.origin) < UNANSWERED_AFTER_MS;
      if (waiting) {
        this.pendingHeartbeats.set(key, e.t);
        continue;
      }
      this.pendingHeartbeats.delete(key);
      this.answered.add(key);
      const attempt = { t: e.t - this.origin, status: e.status, faults: e.faults ?? [] };
      this.live.get(device.label).heartbeats.push(attempt);
      onHeartbeat(device, attempt);
    }
    // An unanswered heartbeat (a stalled answer) is read again until it is answered.
    this.journalSince = Math.min(latest, ...this.pendingHeartbeats.values());
    this.assets = await this.cloud.assets();
    for (const d of this.devices) {
      this.live.get(d.label).stored = this.assets.filter((a) => a.deviceId === d.deviceId).reduce((n, a) => n + a.bytesReceived, 0);
    }
  }

  /** One device's row for the progress display and the plain status lines. */
  row(device) {
    const live = this.live.get(device.label);
    const status = device.status();
    const last = live.states.at(-1);
    const hb = live.heartbeats;
    const ok = hb.filter((h) => h.status === 204).length;
    const gap = hb.length >= 2 ? hb.at(-1).t - hb.at(-2).t : undefined;
    const byKind = status?.queue?.byKind ?? {};
    const pending = Object.values(byKind).reduce((n, k) => n + (k.pending?.items ?? 0), 0);
    const total = device.clips.reduce((n, c) => n + c.bytes, 0);
    return {
      label: device.label,
      state: last?.state ?? (device.daemon ? 'starting' : 'unpaired'),
      heartbeats: hb.length,
      heartbeatsOk: ok,
      lastGapMs: gap,
      channels: status?.channels?.detected ?? [],
      channelsKnown: status?.channels?.known ?? null,
      queued: pending,
      clips: device.clips.length,
      clipsStored: device.clips.filter((c) => this.assets.some((a) => a.deviceId === device.deviceId && a.name === c.name && a.complete)).length,
      bytesStored: Math.min(live.stored, total),
      bytesTotal: total,
    };
  }
}
