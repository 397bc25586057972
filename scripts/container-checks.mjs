// The container files, proven without a registry: agent.Dockerfile and
// fake-cloud.Dockerfile built by podman with BASE = the test's Debian image
// plus this machine's node, then run as packaging/containers/compose.yaml
// says (its commands, environment and hardware trees, read from the file;
// podman's `--network container:` standing in for `network_mode: service:`),
// until every agent has paired and is online. Part of test:systemd.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PODMAN_LIMITS } from './systemd-rig.mjs';

const TIME_SCALE = '60';
const ONLINE_WAIT_MS = 60_000;

function podman(...args) {
  const r = spawnSync('podman', args, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  return { status: r.status, stdout: r.stdout ?? '', out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

/** Compose's `${VAR:-default}` and `$$`, with TIME_SCALE set for a quick run. */
function interpolate(value) {
  const env = { ...process.env, TIME_SCALE };
  return String(value)
    .replace(/\$\{(\w+)(?::-([^}]*))?\}/g, (_, name, fallback) => env[name] || (fallback ?? ''))
    .replace(/\$\$/g, '$');
}

async function loadCompose(file) {
  // js-yaml comes with jest (a dev dependency), which test:systemd runs beside.
  const yaml = (await import('js-yaml')).default;
  return yaml.load(readFileSync(file, 'utf8'));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function containerChecks({ root, baseImage, check }) {
  const dir = path.join(root, 'packaging/containers');
  const compose = await loadCompose(path.join(dir, 'compose.yaml'));
  const tag = `${process.pid}`;
  const nodeBase = `localhost/c2c-agent-node-base:${process.version}`;
  const images = { agent: `localhost/c2c-agent:test-${tag}`, fake: `localhost/c2c-fake-cloud:test-${tag}` };
  const containers = [];
  const volumes = [];
  const context = mkdtempSync(path.join(tmpdir(), 'c2c-node-base-'));
  try {
    // BASE: what node:22-bookworm-slim is, made from what is here.
    const t0 = Date.now();
    if (podman('image', 'exists', nodeBase).status !== 0) {
      copyFileSync(process.execPath, path.join(context, 'node'));
      writeFileSync(path.join(context, 'Containerfile'), `FROM ${baseImage}\nCOPY node /usr/bin/node\n`);
      const b = podman('build', '--runtime', 'runc', '-q', '-t', nodeBase, context);
      if (b.status !== 0) throw new Error(`building the node base image failed: ${b.out.split('\n').at(-1)}`);
    }
    const built = Object.entries({ agent: 'agent.Dockerfile', fake: 'fake-cloud.Dockerfile' }).map(([k, file]) =>
      podman('build', '--runtime', 'runc', '-q', '--build-arg', `BASE=${nodeBase}`, '-f', path.join(dir, file), '-t', images[k], root));
    const buildOk = built.every((b) => b.status === 0);
    check('container images', buildOk, buildOk
      ? `agent.Dockerfile and fake-cloud.Dockerfile built with BASE=${nodeBase} in ${((Date.now() - t0) / 1000).toFixed(1)} s`
      : built.map((b) => b.out.split('\n').at(-1)).join('; '));
    if (!buildOk) return;

    const fakeName = `c2c-ct-fake-${tag}`;
    const fakeCmd = compose.services['fake-cloud'].command.map(interpolate);
    const f = podman('run', '-d', ...PODMAN_LIMITS, '--name', fakeName, images.fake, ...fakeCmd);
    containers.push(fakeName);
    if (f.status !== 0) throw new Error(`fake cloud container: ${f.out}`);

    const agents = Object.entries(compose.services).filter(([, svc]) => svc.network_mode === 'service:fake-cloud');
    for (const [name, svc] of agents) {
      const cname = `c2c-ct-${name}-${tag}`;
      const args = ['run', '-d', ...PODMAN_LIMITS, '--name', cname, '--network', `container:${fakeName}`];
      for (const [k, v] of Object.entries(svc.environment)) args.push('-e', `${k}=${interpolate(v)}`);
      for (const v of svc.volumes) {
        const [src, ...rest] = v.split(':');
        if (src.startsWith('.')) args.push('-v', [path.resolve(dir, src), ...rest].join(':'));
        else {
          volumes.push(`${src}-${tag}`);
          args.push('-v', [`${src}-${tag}`, ...rest].join(':'));
        }
      }
      args.push('--entrypoint', JSON.stringify(svc.entrypoint), images.agent, ...svc.command.map(interpolate));
      const r = podman(...args);
      containers.push(cname);
      if (r.status !== 0) throw new Error(`${name} container: ${r.out}`);
    }

    const t1 = Date.now();
    for (const [name] of agents) {
      const cname = `c2c-ct-${name}-${tag}`;
      let status = { status: null, stdout: '' };
      while (Date.now() - t1 < ONLINE_WAIT_MS) {
        status = podman('exec', cname, 'c2c-agent', 'status');
        if (status.status === 0 && /^state:\s+online/m.test(status.stdout) && /no sync pending/.test(status.stdout)) break;
        await sleep(500);
      }
      const line = (key) => new RegExp(`^${key}:\\s+(.*)$`, 'm').exec(status.stdout)?.[1] ?? '?';
      const user = podman('exec', cname, 'id', '-un').stdout.trim();
      check(`container ${name}`, status.status === 0 && /^online/.test(line('state')) && user === 'c2c-agent',
        `paired and ${line('state').split(',')[0]} after ${((Date.now() - t1) / 1000).toFixed(1)} s, as ${user}; channels: ${line('channels')}`);
    }

    const [first] = agents[0];
    const t2 = Date.now();
    podman('stop', '-t', '10', `c2c-ct-${first}-${tag}`);
    const stopMs = Date.now() - t2;
    const code = podman('inspect', '-f', '{{.State.ExitCode}}', `c2c-ct-${first}-${tag}`).stdout.trim();
    check('container stop', code === '0' && stopMs < 5000, `podman stop ${first}: ${(stopMs / 1000).toFixed(1)} s, exit ${code}`);
  } catch (err) {
    check('containers', false, err instanceof Error ? err.message : String(err));
  } finally {
    for (const c of containers.reverse()) podman('rm', '-f', '-t', '0', c);
    for (const v of volumes) podman('volume', 'rm', '-f', v);
    for (const i of Object.values(images)) podman('rmi', '-f', i);
    rmSync(context, { recursive: true, force: true });
  }
}
