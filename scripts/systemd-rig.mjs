// The machine test:systemd runs on: a Debian root file system made by
// debootstrap (cached as a podman image, so only the first run downloads),
// booted by podman with systemd as PID 1, and the few commands the checks
// need. No registry is involved: the image is imported from a local tarball.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';

const SUITE = 'bookworm';
// systemd-sysv: /sbin/init is systemd; dbus: systemctl and systemd-analyze
// over the bus as on a real camera; procps: ps for the transcript.
const PACKAGES = ['systemd', 'systemd-sysv', 'dbus', 'procps'];
const MIRROR = process.env.C2C_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
// What podman needs on this kind of host (a container inside a VM): the runc
// runtime and explicit limits (the inherited ones are refused).
export const PODMAN_LIMITS = ['--runtime', 'runc', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];
const PODMAN_RUN = [...PODMAN_LIMITS, '--systemd=always'];

export const cacheDir = path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'c2c-agent');
const key = createHash('sha256').update(`${SUITE} minbase ${PACKAGES.join(',')} ${MIRROR}`).digest('hex').slice(0, 12);
export const baseImage = `localhost/c2c-agent-systemd:${SUITE}-${key}`;

function run(cmd, args, options = {}) {
  return spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
}

/** Why this machine cannot run the test, or undefined when it can. */
export function whyNot() {
  if (process.platform !== 'linux') return `not Linux (${process.platform})`;
  for (const tool of ['podman', 'runc']) {
    if (run('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed`;
  }
  const info = run('podman', ['info', '--format', '{{.Host.OCIRuntime.Name}}']);
  if (info.status !== 0) return `podman cannot run here (${(info.stderr || info.stdout).trim().split('\n').at(-1)})`;
  if (run('podman', ['image', 'exists', baseImage]).status === 0) return undefined;
  if (process.getuid?.() !== 0) return 'building the root file system needs root (debootstrap), and no cached image exists';
  if (run('sh', ['-c', 'command -v debootstrap']).status !== 0) return 'debootstrap is not installed and no cached image exists';
  return undefined;
}

/** Makes sure the base image exists; returns how it was obtained. */
export function ensureBaseImage(log) {
  if (run('podman', ['image', 'exists', baseImage]).status === 0) return 'cached image';
  mkdirSync(cacheDir, { recursive: true });
  const tarball = path.join(cacheDir, `rootfs-${SUITE}-${key}.tar`);
  let how = 'cached rootfs tarball';
  if (!existsSync(tarball)) {
    how = 'debootstrap';
    const dir = mkdtempSync(path.join(cacheDir, 'rootfs-'));
    log(`debootstrap ${SUITE} (${PACKAGES.join(', ')}) from ${MIRROR} ...`);
    const r = run('debootstrap', ['--variant=minbase', `--include=${PACKAGES.join(',')}`, SUITE, dir, MIRROR]);
    if (r.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`debootstrap failed:\n${(r.stdout + r.stderr).split('\n').slice(-15).join('\n')}`);
    }
    // An empty machine id: systemd makes a fresh one at each boot, as on a
    // camera's first boot from a flashed image.
    writeFileSync(path.join(dir, 'etc/machine-id'), '');
    execFileSync('tar', ['-C', dir, '-cf', `${tarball}.tmp`, '.']);
    execFileSync('mv', [`${tarball}.tmp`, tarball]);
    rmSync(dir, { recursive: true, force: true });
  }
  log(`podman import ${path.basename(tarball)} ...`);
  execFileSync('podman', ['import', '--quiet', tarball, baseImage], { stdio: ['ignore', 'ignore', 'inherit'] });
  return how;
}

/**
 * A `nodejs` package holding this machine's node binary: Debian bookworm's
 * own nodejs is 18, too old for the agent, and c2c-agent's package depends
 * on nodejs (>= 20), so installing both proves that dependency is met the
 * way a camera meets it (NodeSource's nodejs package, say).
 */
export function buildNodeDeb(outDir) {
  const version = process.version.slice(1);
  const stage = mkdtempSync(path.join(tmpdir(), 'c2c-nodejs-deb-'));
  mkdirSync(path.join(stage, 'DEBIAN'));
  mkdirSync(path.join(stage, 'usr/bin'), { recursive: true });
  copyFileSync(process.execPath, path.join(stage, 'usr/bin/node'));
  chmodSync(path.join(stage, 'usr/bin/node'), 0o755);
  const arch = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
  writeFileSync(
    path.join(stage, 'DEBIAN/control'),
    `Package: nodejs\nVersion: ${version}-local1\nArchitecture: ${arch}\nMaintainer: c2c-agent test <test@localhost>\nDescription: Node.js ${version} (the binary of the machine running the test)\n`,
  );
  const deb = path.join(outDir, `nodejs_${version}-local1_${arch}.deb`);
  execFileSync('dpkg-deb', ['--root-owner-group', '-Znone', '--build', stage, deb], { stdio: 'ignore' });
  rmSync(stage, { recursive: true, force: true });
  return deb;
}

/** One booted container; every method is synchronous and returns plain results. */
export class Machine {
  constructor(name) {
    this.name = name;
  }

  boot() {
    run('podman', ['rm', '-f', this.name]);
    const r = run('podman', ['run', '-d', '--name', this.name, ...PODMAN_RUN, baseImage, '/sbin/init']);
    if (r.status !== 0) throw new Error(`podman run failed: ${r.stderr.trim()}`);
    // is-system-running --wait returns once boot is over (running or
    // degraded), but fails at once while PID 1 is not yet listening.
    const wait = 'for i in $(seq 120); do s=$(systemctl is-system-running --wait 2>/dev/null);' +
      ' case "$s" in running|degraded) break ;; esac; sleep 0.25; done; echo "$s"';
    return this.sh(wait).stdout.trim();
  }

  /** Runs a shell command inside; never throws. */
  sh(command, { timeoutMs = 120_000 } = {}) {
    const r = run('podman', ['exec', this.name, 'sh', '-c', command], { timeout: timeoutMs });
    return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
  }

  /**
   * Waits inside the container until the shell condition holds (polled every 250 ms by the
   * container's own shell) or `timeoutMs` has passed; true when it held. One `podman exec` for the
   * whole wait: an exec a poll cost the host about 0.2 CPU s, half a core through a 30 s wait.
   */
  waitInside(condition, timeoutMs) {
    const tries = Math.ceil(timeoutMs / 250);
    const loop = `i=0; while [ $i -lt ${tries} ]; do if ${condition}; then exit 0; fi; sleep 0.25; i=$((i+1)); done; exit 1`;
    return this.sh(loop, { timeoutMs: timeoutMs + 30_000 }).status === 0;
  }

  copyIn(from, to) {
    execFileSync('podman', ['cp', from, `${this.name}:${to}`]);
  }

  /** `systemctl show` properties as an object. */
  show(unit, props) {
    const out = this.sh(`systemctl show ${unit} -p ${props.join(',')}`).stdout;
    return Object.fromEntries(out.trim().split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  }

  /** GET on the fake cloud's admin API, from inside (it binds loopback). */
  admin(adminUrl, pathname) {
    const js = `fetch(${JSON.stringify(adminUrl + pathname)}).then(r=>r.text()).then(t=>process.stdout.write(t),e=>{console.error(String(e));process.exit(1)})`;
    const r = this.sh(`node -e '${js}'`);
    if (r.status !== 0) throw new Error(`admin GET ${pathname}: ${r.out}`);
    return JSON.parse(r.stdout);
  }

  remove() {
    run('podman', ['rm', '-f', '-t', '0', this.name]);
  }
}
