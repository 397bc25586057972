// A camera on a network of its own: a network namespace linked by a veth
// pair to this host, where the fake cloud listens (through a TCP relay on the
// host's end of the link, so the fake itself keeps its loopback-only socket).
// The camera reaches it as `localhost` (ip netns exec bind-mounts
// /etc/netns/<ns>/hosts over /etc/hosts): the name the fake's certificate
// carries (and a loopback name, where plain http is allowed), while every
// byte crosses the veth. The relay is TCP: TLS passes through it untouched.
//
// The events a camera meets: the interface down and up, its address (and
// route) changed, and its kept-alive flows blackholed (a NAT mapping lost:
// old flows die without FIN or RST, new ones work). Needs root and iproute2;
// anything that cannot be set up throws, naming the command that failed.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { quiet, run, tool } from '../support/system-command.js';

export interface CameraNet {
  ns: string;
  /** The host's end of the link and the camera's interface. */
  hostIf: string;
  camIf: string;
  /** Where the camera finds the fake: <scheme>://localhost:<port>. */
  url: string;
  /** The camera's current address. */
  address(): string;
  /** Runs a command inside the namespace. */
  exec(cmd: string, args: string[]): string;
  linkDown(): void;
  /** Up again, with the route a DHCP client would put back. */
  linkUp(): void;
  /** Moves the camera to the other subnet (new address, new default route), dropping the old address. */
  changeAddress(): { from: string; to: string };
  /** Every established flow to the fake dropped silently from now on (new ones pass); returns the ports hit. */
  blackholeFlows(): number[];
  /** Rules of blackholeFlows removed. */
  clearBlackhole(): void;
  /** Egress from the camera capped (a slow uplink), or uncapped again. */
  throttle(rate: string | undefined): void;
  /** Connections the relay has accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

const PREFIX = 'c2c-cam-';

/** Namespaces left by a run that was killed (its pid gone): removed so names and subnets are free. */
export function sweepStale(): void {
  let names: string[] = [];
  try {
    names = run('ip', ['netns', 'list']).split('\n').map((l) => l.split(' ')[0] ?? '');
  } catch {
    return;
  }
  for (const name of names.filter((n) => n.startsWith(PREFIX))) {
    const pid = Number(name.slice(PREFIX.length));
    let alive = false;
    try {
      process.kill(pid, 0);
      alive = pid !== process.pid;
    } catch {
      alive = false;
    }
    if (!alive) removeNamespace(name, `c2ch${pid}`);
  }
  try {
    for (const d of readdirSync('/etc/netns')) if (d.startsWith(PREFIX) && !names.includes(d)) rmSync(`/etc/netns/${d}`, { recursive: true, force: true });
  } catch {
    // no /etc/netns
  }
}

function removeNamespace(ns: string, hostIf: string): void {
  quiet('ip', ['netns', 'del', ns]);
  quiet('ip', ['link', 'del', hostIf]);
  rmSync(`/etc/netns/${ns}`, { recursive: true, force: true });
}

/**
 * A TCP relay from the host's end of the link to the fake's loopback port:
 * each side's close or error ends the other, and a dead camera side (no FIN,
 * no RST) leaves its pair open as a real server's socket would stay.
 */
function relay(listenHost: string, target: number): Promise<{ port: number; server: net.Server; sockets: Set<net.Socket>; accepted: () => number }> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((front) => {
    accepted++;
    const back = net.connect(target, '127.0.0.1');
    for (const s of [front, back]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    front.pipe(back);
    back.pipe(front);
    front.on('close', () => back.destroy());
    back.on('close', () => front.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, listenHost, () => resolve({ port: (server.address() as net.AddressInfo).port, server, sockets, accepted: () => accepted }));
  });
}

/**
 * Makes the namespace, the link and the relay to `cloudPort`. Throws (never
 * skips) when a namespace cannot be made: this test exists to run.
 */
export async function createCameraNet(cloudPort: number, scheme: 'http' | 'https'): Promise<CameraNet> {
  if (process.getuid?.() !== 0) throw new Error(`network namespaces need root (uid ${process.getuid?.()}); run this suite as root, as CI does`);
  sweepStale();
  const id = process.pid;
  const ns = `${PREFIX}${id}`;
  const hostIf = `c2ch${id}`;
  const camIf = `c2cc${id}`;
  // A pair of /24s no other run on this host uses (two runs at once, by two checkouts).
  const used = run('ip', ['-o', '-4', 'addr', 'show']);
  const free = (k: number): boolean => !used.includes(` 10.231.${k}.`) && !used.includes(` 10.232.${k}.`);
  const n = Array.from({ length: 250 }, (_, i) => (id + i) % 250).find(free);
  if (n === undefined) throw new Error('cannot create the camera\'s network namespace: every 10.231.N.0/24 on this host is taken');
  // Two subnets: the camera starts on the first and moves between them.
  const subnets = [`10.231.${n}`, `10.232.${n}`];
  const hostAddr = `${subnets[0]}.1`;
  let current = 0;
  try {
    run('ip', ['netns', 'add', ns]);
    run('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', camIf]);
    run('ip', ['link', 'set', camIf, 'netns', ns]);
    for (const s of subnets) run('ip', ['addr', 'add', `${s}.1/24`, 'dev', hostIf]);
    run('ip', ['link', 'set', hostIf, 'up']);
    run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    run('ip', ['-n', ns, 'addr', 'add', `${subnets[0]}.2/24`, 'dev', camIf]);
    run('ip', ['-n', ns, 'link', 'set', camIf, 'up']);
    mkdirSync(`/etc/netns/${ns}`, { recursive: true });
    writeFileSync(`/etc/netns/${ns}/hosts`, `${hostAddr} localhost\n`);
  } catch (err) {
    removeNamespace(ns, hostIf);
    throw new Error(`cannot create the camera's network namespace: ${(err as Error).message}`);
  }
  let relayed: Awaited<ReturnType<typeof relay>>;
  try {
    relayed = await relay(hostAddr, cloudPort);
  } catch (err) {
    removeNamespace(ns, hostIf);
    throw err;
  }
  const exec = (cmd: string, args: string[]): string => run('ip', ['netns', 'exec', ns, tool(cmd), ...args]);
  const blackholed: number[] = [];
  const routeFor = (i: number): void => {
    // On the first subnet the fake is on the link; on the second it is behind the host as a gateway.
    if (i === 1) run('ip', ['-n', ns, 'route', 'replace', 'default', 'via', `${subnets[1]}.1`, 'dev', camIf]);
  };
  const rule = (op: '-I' | '-D', port: number): void => {
    exec('iptables', [op, 'OUTPUT', '-p', 'tcp', '--sport', String(port), '-j', 'DROP']);
    exec('iptables', [op, 'INPUT', '-p', 'tcp', '--dport', String(port), '-j', 'DROP']);
  };
  let closed = false;
  // A jest worker that exits without afterAll still takes its namespace with it.
  const onExit = (): void => removeNamespace(ns, hostIf);
  process.once('exit', onExit);
  return {
    ns,
    hostIf,
    camIf,
    url: `${scheme}://localhost:${relayed.port}`,
    address: () => `${subnets[current]}.2`,
    exec,
    linkDown: () => run('ip', ['-n', ns, 'link', 'set', camIf, 'down']),
    linkUp() {
      run('ip', ['-n', ns, 'link', 'set', camIf, 'up']);
      routeFor(current);
    },
    changeAddress() {
      const from = `${subnets[current]}.2`;
      const next = 1 - current;
      const to = `${subnets[next]}.2`;
      run('ip', ['-n', ns, 'addr', 'add', `${to}/24`, 'dev', camIf]);
      routeFor(next);
      run('ip', ['-n', ns, 'addr', 'del', `${from}/24`, 'dev', camIf]);
      current = next;
      return { from, to };
    },
    blackholeFlows() {
      const out = exec('ss', ['-Htn', 'state', 'established', 'dst', `${hostAddr}:${relayed.port}`]);
      const ports = [...out.matchAll(/\S+:(\d+)\s+\S+:\d+\s*$/gm)].map((m) => Number(m[1]));
      for (const p of ports) {
        rule('-I', p);
        blackholed.push(p);
      }
      return ports;
    },
    clearBlackhole() {
      for (const p of blackholed.splice(0)) rule('-D', p);
    },
    throttle(rate) {
      if (rate === undefined) quiet('ip', ['netns', 'exec', ns, tool('tc'), 'qdisc', 'del', 'dev', camIf, 'root']);
      else exec('tc', ['qdisc', 'replace', 'dev', camIf, 'root', 'tbf', 'rate', rate, 'burst', '32kb', 'latency', '2s']);
    },
    connections: () => relayed.accepted(),
    async close() {
      if (closed) return;
      closed = true;
      for (const s of relayed.sockets) s.destroy();
      await new Promise<void>((r) => relayed.server.close(() => r()));
      removeNamespace(ns, hostIf);
      process.off('exit', onExit);
    },
  };
}
