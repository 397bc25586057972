// The fake cloud as a child process (dist/fake-cloud.mjs) and the admin
// calls the story makes: faults, the outage, the person's revoke, and the
// service's side of every figure in the report (journal, referee, assets).
import { spawnTracked } from './children.mjs';
import { randomBytes } from 'node:crypto';
import readline from 'node:readline';

export class SimCloud {
  constructor({ bundle, timeScale, autoApproveSeconds, plainHttp = false, caDir }) {
    this.plainHttp = plainHttp;
    // Its CA file goes in the simulator's work dir: the fake may end by SIGKILL, which leaves its own temp dir behind.
    this.caDir = caDir;
    this.bundle = bundle;
    this.timeScale = timeScale;
    this.autoApproveSeconds = autoApproveSeconds;
    this.child = undefined;
    this.url = '';
    this.adminUrl = '';
    this.clientSecret = '';
    /** The fake's throwaway CA (PEM file) the agents trust; '' over plain HTTP. */
    this.caFile = '';
    this.pairUrl = '';
  }

  async start() {
    const secret = `sim-${randomBytes(12).toString('hex')}`;
    const args = ['--port', '0', '--devices', '0', '--time-scale', String(this.timeScale), '--auto-approve', String(this.autoApproveSeconds), '--client-secret', secret, ...(this.plainHttp ? ['--plain-http'] : this.caDir ? ['--ca-dir', this.caDir] : [])];
    // Its own process group: a Ctrl-C at the terminal stops the simulator, which still needs the fake for its report (children.mjs ends it).
    this.child = spawnTracked(process.execPath, [this.bundle, ...args], { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    const info = await new Promise((resolve, reject) => {
      const rl = readline.createInterface({ input: this.child.stdout });
      rl.once('line', (line) => {
        rl.close();
        try {
          resolve(JSON.parse(line));
        } catch {
          reject(new Error(`the fake cloud printed ${JSON.stringify(line.slice(0, 120))} instead of its JSON line`));
        }
      });
      this.child.once('exit', (code) => reject(new Error(`the fake cloud exited with ${code} before it was ready`)));
    });
    this.url = info.url;
    this.adminUrl = info.adminUrl;
    this.clientSecret = info.clientSecret;
    this.caFile = info.caFile ?? '';
    /** The approval page a person opens from a pairing code's link. */
    this.pairUrl = info.pairUrl ?? `${info.url}/pair`;
  }

  async admin(method, path, body) {
    const res = await fetch(`${this.adminUrl}${path}`, {
      method,
      ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`fake cloud admin ${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : undefined;
  }

  /** Agent-time ms since the fake started: the clock of the journal, the referee and the assets. */
  async now() {
    return (await this.admin('GET', '/now')).t;
  }

  refuseConnections = () => this.admin('POST', '/refuse');
  acceptConnections = () => this.admin('POST', '/accept');
  addFault = (fault) => this.admin('POST', '/faults', fault);
  clearFaults = () => this.admin('DELETE', '/faults');
  revoke = (deviceId) => this.admin('POST', `/devices/${encodeURIComponent(deviceId)}/revoke`);
  device = (deviceId) => this.admin('GET', `/devices/${encodeURIComponent(deviceId)}`);
  referee = (deviceId) => this.admin('GET', `/referee/${encodeURIComponent(deviceId)}`);
  journal = (since) => this.admin('GET', `/journal?since=${since}`);
  assets = () => this.admin('GET', '/assets');
  presses = () => this.admin('GET', '/presses');

  async close() {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}
