// What each feature of agent/daemon/features.ts costs an idle daemon: on but
// unused, and used. For each feature three daemons run at once against one
// fake cloud, as the unit runs them (its node flags, over TLS), each
// measured at its own 10th heartbeat, at the idle rows' time scale and past
// V8's first memory-reducer pass as they are (idle.mjs):
//   full   the daemon as shipped (dist/c2c-agentd.cjs), nothing asked of it;
//   used   the same file, the feature used once early (a clip uploaded, a
//          pairing asked for and cancelled, a preference changed, the status
//          read, an events reader attached);
//   off    a daemon file built here without that feature's line in
//          features.ts (nothing else changed).
// "on, unused" is full - off; "used" is used - full. The outbox is not
// taken out (every feature's ctx.outbox is its unit); logging and web have
// their own rows (their issues').
import http from 'node:http';
import { mkdirSync, readFileSync, writeFileSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { caEnv, daemonBundle, daemonNodeArgs, fakeCloud, killAll, launch, rssKiB, runtimeDirOf, sleep, tmp, waitHeartbeats } from './procs.mjs';
import { fmt, row, signed } from './figures.mjs';
import { unitEnvironment } from '../bench-upload-helpers.mjs';
import { daemonFilesOptions, root } from '../build-config.mjs';
import { REDUCER_PASS_S, TEN_BEATS_SCALE } from './idle.mjs';

const SCALE = TEN_BEATS_SCALE;
const MiB = 1024;

/** The features measured, and how each is used. */
export const FEATURE_ROWS = ['channels', 'prefs', 'uploads', 'network', 'pairing', 'local-api'];

/** A row's measure. */
export const featureLabel = (name) => `feature ${name}: on but unused / used, idle RSS at 10 heartbeats`;

/** A daemon file without `name`'s line in features.ts, built into the temp dir. */
async function buildWithout(name) {
  const { build } = await import('esbuild');
  const features = path.join(root, 'agent/daemon/features.ts');
  const without = {
    name: 'bench-without-feature',
    setup(b) {
      b.onLoad({ filter: /agent\/daemon\/features\.ts$/ }, () => {
        const text = readFileSync(features, 'utf8');
        const ident = { 'local-api': 'localApi' }[name] ?? name;
        const line = new RegExp(`^\\s*${ident},\\s*$`, 'm');
        if (!line.test(text)) throw new Error(`bench: no line '${ident},' in features.ts`);
        return { contents: text.replace(line, ''), loader: 'ts' };
      });
    },
  };
  // Both files, as dist/ has them (the daemon's file alone would not run).
  const dir = path.join(tmp, `without-${name}`);
  await Promise.all(daemonFilesOptions(dir, { plugins: [without] }).map((o) => build({ ...o, metafile: false, logLevel: 'error' })));
  return path.join(dir, 'c2c-agentd.cjs');
}

/** One request to the daemon's local API. */
function api(sock, method, p, body) {
  return new Promise((resolve) => {
    const req = http.request({ socketPath: sock, method, path: p, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(0));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

async function socketUp(sock, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await api(sock, 'GET', '/v1/prefs')) !== 0) return;
    await sleep(50);
  }
  throw new Error(`bench: no local API at ${sock}`);
}

/** A daemon of `file` as device `i`, with its own dirs (and a media dir). */
function daemon(file, cloud, name, i, env, unit) {
  const dir = path.join(tmp, `feature-${name}`);
  const media = path.join(dir, 'media');
  mkdirSync(media, { recursive: true });
  writeFileSync(path.join(dir, 'config.json'), '{}\n');
  const child = launch(
    [...daemonNodeArgs, file, 'run', '--api-url', cloud.url, '--time-scale', String(SCALE), '--state-dir', path.join(dir, 'state'), '--runtime-dir', runtimeDirOf(`feature-${name}`)],
    { C2C_TOKEN: cloud.devices[i].accessToken, C2C_LOG_LEVEL: 'info', C2C_CONFIG: path.join(dir, 'config.json'), C2C_MEDIA_DIR: media, C2C_MEDIA_SETTLE_SECONDS: '1', ...caEnv(cloud), ...unit, ...env },
  );
  child.stdout.resume();
  return { child, sock: path.join(runtimeDirOf(`feature-${name}`), 'api.sock'), media };
}

/** Uses `name` once in the daemon `d` (its local API up). */
async function use(name, d) {
  switch (name) {
    case 'uploads': {
      // One 4 MiB clip, older than the settle time: taken at once, uploaded through the workers.
      const clip = path.join(d.media, 'clip.mp4');
      writeFileSync(clip, Buffer.alloc(4 * 1024 * 1024, 7));
      const old = new Date(Date.now() - 3_600_000);
      utimesSync(clip, old, old);
      return 'one 4 MiB clip uploaded';
    }
    case 'pairing':
      // Without a client secret the flow refuses before asking the service; its code is loaded all the same.
      await api(d.sock, 'POST', '/v1/pair', {});
      await api(d.sock, 'DELETE', '/v1/pair');
      return 'POST and DELETE /v1/pair';
    case 'prefs':
      await api(d.sock, 'PATCH', '/v1/prefs', { autoUpload: false });
      return 'PATCH /v1/prefs';
    case 'network':
    case 'local-api':
      await api(d.sock, 'GET', '/v1/status');
      await api(d.sock, 'GET', '/v1/uploads');
      return 'GET /v1/status and /v1/uploads';
    case 'channels':
      return 'the device check\'s reconcile at start (no channel plugged in)';
    default:
      throw new Error(`bench: no use for ${name}`);
  }
}

/** { rows, notes }: one row per feature. */
export async function featureCosts() {
  const unit = unitEnvironment(root);
  const rows = [];
  const said = [];
  for (const name of FEATURE_ROWS) {
    const off = await buildWithout(name);
    const cloud = await fakeCloud(SCALE, 3);
    const launched = Date.now();
    const full = daemon(daemonBundle, cloud, `${name}-full`, 0, {}, unit);
    const used = daemon(daemonBundle, cloud, `${name}-used`, 1, {}, unit);
    const without = daemon(off, cloud, `${name}-off`, 2, {}, unit);
    await socketUp(used.sock);
    said.push(`${name}: ${await use(name, used)}`);
    const at = {};
    await Promise.all([[full, 0, 'full'], [used, 1, 'used'], [without, 2, 'off']].map(async ([d, i, k]) => {
      await waitHeartbeats(cloud, 10, (10 * 300 * 1000) / SCALE + 30_000, i);
      await sleep(Math.max(0, REDUCER_PASS_S * 1000 - (Date.now() - launched)));
      at[k] = rssKiB(d.child.pid);
    }));
    killAll();
    rows.push(row(featureLabel(name), {
      agent: `${signed((at.full - at.off) / MiB)} / ${signed((at.used - at.full) / MiB)} MiB`,
      baseline: `${fmt(at.full / MiB, 1)} MiB as shipped, ${fmt(at.off / MiB, 1)} without it`,
      goal: 'none (for comparison)',
    }));
  }
  return {
    rows,
    notes: [`Features: for each, three daemons at once against one fake cloud (the unit's flags, TLS, scale ${SCALE}), each at its own 10th heartbeat and not before ${REDUCER_PASS_S} s after start: as shipped, as shipped with the feature used once early (${said.join('; ')}), and built without its line in daemon/features.ts. "On but unused" is shipped - without, "used" is used - shipped; a difference under about 0.3 MiB is within what three runs of one daemon differ by.`],
  };
}
