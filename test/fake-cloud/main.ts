// Standalone fake cloud: prints one JSON line {url, adminUrl, caFile,
// clientSecret, pairUrl, devices} on stdout, then serves until SIGINT/SIGTERM. HTTPS
// with a throwaway CA by default (caFile names its PEM); --plain-http serves
// plain HTTP on loopback instead (caFile is then '').
import { parseArgs } from 'node:util';
import { startFakeCloud } from './index.js';
import { PAIR_PAGE_PATH } from './approval-page.js';
import type { FakeCloudOptions } from './index.js';
import { CERTIFICATE_KINDS, type CertificateKind } from './certs.js';

const USAGE = `usage: fake-cloud [--port N] [--admin-port N] [--devices N] [--time-scale N]
                  [--auto-approve SECONDS] [--token-lifetime SECONDS]
                  [--rate-limit LIMIT/WINDOW_MS] [--client-secret SECRET]
                  [--plain-http | --certificate KIND] [--ca-dir DIR]
  KIND: ${CERTIFICATE_KINDS.filter((k) => k !== 'custom').join(', ')}`;

function fail(message: string): never {
  process.stderr.write(`fake-cloud: ${message}\n${USAGE}\n`);
  process.exit(64);
}

function num(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) fail(`--${name} must be a number >= ${min}, got ${JSON.stringify(value)}`);
  return n;
}

let values: Record<string, string | boolean | undefined>;
try {
  ({ values } = parseArgs({
    options: {
      port: { type: 'string' },
      'admin-port': { type: 'string' },
      devices: { type: 'string' },
      'time-scale': { type: 'string' },
      'auto-approve': { type: 'string' },
      'token-lifetime': { type: 'string' },
      'rate-limit': { type: 'string' },
      'client-secret': { type: 'string' },
      'plain-http': { type: 'boolean' },
      certificate: { type: 'string' },
      'ca-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }));
} catch (err) {
  fail((err as Error).message);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

const str = (k: string) => values[k] as string | undefined;
const options: FakeCloudOptions = {};
const set = <K extends keyof FakeCloudOptions>(k: K, v: FakeCloudOptions[K] | undefined) => {
  if (v !== undefined) options[k] = v;
};
set('port', num('port', str('port'), 0));
set('adminPort', num('admin-port', str('admin-port'), 0));
set('devices', num('devices', str('devices'), 0));
set('timeScale', num('time-scale', str('time-scale'), Number.MIN_VALUE));
set('autoApproveSeconds', num('auto-approve', str('auto-approve'), 0));
set('tokenLifetimeSeconds', num('token-lifetime', str('token-lifetime'), 1));
set('clientSecret', str('client-secret'));
options.tls = values['plain-http'] !== true;
const certificate = str('certificate');
if (certificate !== undefined) {
  if (!options.tls) fail('--certificate needs HTTPS: drop --plain-http');
  if (!CERTIFICATE_KINDS.includes(certificate as CertificateKind) || certificate === 'custom') fail(`--certificate must be one of the KINDs, got ${JSON.stringify(certificate)}`);
  options.certificate = { kind: certificate as CertificateKind };
}
set('caDir', str('ca-dir'));
const rl = str('rate-limit');
if (rl !== undefined) {
  const m = /^(\d+)\/(\d+)$/.exec(rl);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) fail('--rate-limit takes LIMIT/WINDOW_MS, e.g. 100/1000');
  options.rateLimit = { limit: Number(m[1]), windowMs: Number(m[2]) };
}

const cloud = await startFakeCloud(options);
process.stdout.write(
  JSON.stringify({ url: cloud.url, adminUrl: cloud.adminUrl, caFile: cloud.caFile, clientSecret: cloud.clientSecret, pairUrl: `${cloud.url}${PAIR_PAGE_PATH}`, devices: cloud.devices }) + '\n',
);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  cloud.close().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`fake-cloud: close failed after ${signal}: ${String(err)}\n`);
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
