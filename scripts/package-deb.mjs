// Builds dist/c2c-agent_<version>_all.deb with dpkg-deb from the files in
// packaging/files.list (the list scripts/install.sh installs), the control
// file and maintainer scripts in packaging/debian/ (packaging/lifecycle.sh
// inlined where they say #LIFECYCLE#), a copyright file, a changelog and a
// man page made from `c2c-agent --help`.
//
//   npm run package:deb [-- --lintian]     (--lintian: run lintian on the result)
//   node scripts/package-deb.mjs --stage DIR   (stage only, no dpkg-deb: for tests)
//   node scripts/package-deb.mjs --out DIR     (the .deb elsewhere than dist/)
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { readManifest } from './packaging-manifest.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const debianDir = path.join(root, 'packaging/debian');
const PACKAGE = 'c2c-agent';
const DIRS = { unitdir: '/usr/lib/systemd/system', bindir: '/usr/bin' };

function usage(message) {
  process.stderr.write(`package-deb: ${message}\nusage: node scripts/package-deb.mjs [--lintian] [--stage DIR] [--out DIR]\n`);
  process.exit(64);
}

let opts;
try {
  ({ values: opts } = parseArgs({ options: { lintian: { type: 'boolean' }, stage: { type: 'string' }, out: { type: 'string' } } }));
} catch (err) {
  usage(err.message);
}

const version = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
// C2C_DIST_DIR stands in for dist/, as for scripts/install.sh (tests).
const distDir = process.env.C2C_DIST_DIR ?? path.join(root, 'dist');
const bundle = path.join(distDir, 'c2c-agent.mjs');
if (!existsSync(bundle)) {
  process.stderr.write(`package-deb: ${bundle} is missing; run 'npm run build' first\n`);
  process.exit(66);
}
// Reproducible: every date in the package is the last commit's.
const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? gitCommitTime() ?? Math.floor(Date.now() / 1000));

function gitCommitTime() {
  const r = spawnSync('git', ['-C', root, 'log', '-1', '--format=%ct'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() !== '' ? r.stdout.trim() : undefined;
}

const stage = opts.stage ? path.resolve(opts.stage) : mkdtempSync(path.join(tmpdir(), 'c2c-deb-'));
if (opts.stage && existsSync(stage) && readdirSync(stage).length > 0) {
  process.stderr.write(`package-deb: --stage ${stage} is not empty; give a new or empty folder\n`);
  process.exit(73);
}

function put(rel, content, mode) {
  const to = path.join(stage, rel);
  mkdirSync(path.dirname(to), { recursive: true });
  writeFileSync(to, content);
  chmodSync(to, mode);
}

const conffiles = [];
for (const entry of readManifest(root, DIRS, distDir)) {
  for (const { from, to } of entry.files) {
    put(to, readFileSync(from), entry.mode);
    if (entry.kind === 'config') conffiles.push(to);
  }
}

const docDir = `/usr/share/doc/${PACKAGE}`;
put(`${docDir}/copyright`, readFileSync(path.join(debianDir, 'copyright')), 0o644);
put(`${docDir}/changelog.gz`, gzipSync(changelog(), { level: 9 }), 0o644);
put(`/usr/share/man/man1/${PACKAGE}.1.gz`, gzipSync(manPage(), { level: 9 }), 0o644);
put(`/usr/share/lintian/overrides/${PACKAGE}`, readFileSync(path.join(debianDir, 'lintian-overrides')), 0o644);

const lifecycle = readFileSync(path.join(root, 'packaging/lifecycle.sh'), 'utf8').trimEnd();
for (const script of ['postinst', 'prerm', 'postrm']) {
  const text = readFileSync(path.join(debianDir, script), 'utf8');
  if (!text.includes('#LIFECYCLE#')) throw new Error(`packaging/debian/${script} has no #LIFECYCLE# line`);
  put(`DEBIAN/${script}`, text.replace('#LIFECYCLE#', lifecycle), 0o755);
}
put('DEBIAN/conffiles', conffiles.map((f) => `${f}\n`).join(''), 0o644);
put('DEBIAN/md5sums', md5sums(), 0o644);
const control = readFileSync(path.join(debianDir, 'control'), 'utf8')
  .replace('@VERSION@', version)
  .replace('@INSTALLED_SIZE@', String(installedSizeKiB()));
put('DEBIAN/control', control, 0o644);
clampTimes(stage);

if (opts.stage) {
  process.stdout.write(`${stage}\n`);
  process.exit(0);
}
const outDir = path.resolve(opts.out ?? path.join(root, 'dist'));
mkdirSync(outDir, { recursive: true });
const deb = path.join(outDir, `${PACKAGE}_${version}_all.deb`);
const built = spawnSync('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', stage, deb], {
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) },
});
if (built.error !== undefined || built.status !== 0) {
  rmSync(stage, { recursive: true, force: true });
  process.stderr.write(`package-deb: dpkg-deb ${built.error ? `cannot run (${built.error.code}; it comes with Debian's dpkg)` : `failed with exit ${built.status}`}\n`);
  process.exit(built.error ? 69 : 70);
}
rmSync(stage, { recursive: true, force: true });
process.stdout.write(`${path.relative(process.cwd(), deb) || deb} (${(statSync(deb).size / 1024).toFixed(0)} KiB)\n`);
if (opts.lintian) {
  // lintian refuses to be quiet as root; it needs no privilege to read a package.
  const asUser = process.getuid?.() === 0 && existsSync('/usr/sbin/runuser') ? ['/usr/sbin/runuser', '-u', 'nobody', '--'] : [];
  // A copy nobody can read, wherever the checkout lives.
  const readable = mkdtempSync(path.join(tmpdir(), 'c2c-lintian-'));
  chmodSync(readable, 0o755);
  const copy = path.join(readable, path.basename(deb));
  copyFileSync(deb, copy);
  chmodSync(copy, 0o644);
  const args = [...asUser, 'lintian', '--display-info', '--pedantic', copy];
  const r = spawnSync(args[0], args.slice(1), { encoding: 'utf8', cwd: readable });
  rmSync(readable, { recursive: true, force: true });
  if (r.error !== undefined) {
    process.stdout.write(`lintian: cannot run (${r.error.code}); the package is built but not checked (apt install lintian)\n`);
    process.exit(0);
  }
  const out = `${r.stdout}${r.stderr}`.trim();
  process.stdout.write(out === '' ? 'lintian: no tags\n' : `${out}\n`);
  process.exit(r.status ?? 1);
}

function walk(dir, rel = '') {
  return readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((d) => {
    const child = path.join(rel, d.name);
    return d.isDirectory() ? [child + '/', ...walk(dir, child)] : [child];
  });
}

function md5sums() {
  return walk(stage)
    .filter((f) => !f.endsWith('/') && !f.startsWith('DEBIAN/'))
    .sort()
    .map((f) => `${createHash('md5').update(readFileSync(path.join(stage, f))).digest('hex')}  ${f}\n`)
    .join('');
}

function installedSizeKiB() {
  return walk(stage)
    .filter((f) => !f.startsWith('DEBIAN'))
    .reduce((kib, f) => kib + (f.endsWith('/') ? 1 : Math.ceil(statSync(path.join(stage, f)).size / 1024)), 0);
}

function clampTimes(dir) {
  for (const f of walk(dir)) utimesSync(path.join(dir, f), epoch, epoch);
}

function rfc2822(seconds) {
  return new Date(seconds * 1000).toUTCString().replace(/GMT$/, '+0000').replace(/^(\w+), 0?(\d+)/, '$1, $2');
}

function changelog() {
  const maintainer = /^Maintainer: (.*)$/m.exec(readFileSync(path.join(debianDir, 'control'), 'utf8'))?.[1];
  return `${PACKAGE} (${version}) unstable; urgency=medium\n\n  * Built from the ${PACKAGE} repository; see its git history.\n\n -- ${maintainer}  ${rfc2822(epoch)}\n`;
}

// The man page is the --help text, so it cannot drift from the program.
function manPage() {
  const help = execFileSync(process.execPath, [bundle, '--help'], { encoding: 'utf8' });
  const escaped = help
    .trimEnd()
    .split('\n')
    .map((line) => line.replace(/\\/g, '\\e').replace(/^([.'])/, '\\&$1'))
    .join('\n');
  const date = new Date(epoch * 1000).toISOString().slice(0, 10);
  return [
    `.TH C2C-AGENT 1 ${date} "${PACKAGE} ${version}" "User Commands"`,
    '.SH NAME',
    `${PACKAGE} \\- camera-to-cloud device agent (heartbeat daemon and CLI)`,
    '.SH SYNOPSIS',
    `.B ${PACKAGE}`,
    '.I command',
    '.RI [ options ]',
    '.SH DESCRIPTION',
    '.nf',
    escaped,
    '.fi',
    '.SH FILES',
    '/etc/c2c-agent/config.json, /var/lib/c2c-agent, /run/c2c-agent',
    '.SH SEE ALSO',
    '.BR systemctl (1),',
    '.BR journalctl (1)',
    '',
  ].join('\n');
}
