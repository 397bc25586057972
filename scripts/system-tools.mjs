// What `npm test` needs of the machine beyond Node and npm: one row per suite
// or step that needs a system tool, the commands it runs and the Debian
// packages that bring them. `npm test` (scripts/test.mjs) asks `provide()`
// first: as root with apt it installs whatever is missing, once and quietly;
// what is still missing after that is one line per suite saying how to make it
// run, and the suite is left out of the run. With CI=true a suite left out
// fails the run: a green CI must have run everything.
//
// One home: a suite that starts to need another tool adds it here, and the
// fresh machine gets it from the same place as CI.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * @typedef {object} Need
 * @property {string} name       what the run calls it (a jest suite's folder, or a step of scripts/test.mjs)
 * @property {'jest' | 'step'} kind
 * @property {string} [paths]    for a jest suite: the test path pattern it is left out by
 * @property {string[]} commands what it runs, looked up in the system folders
 * @property {string[]} packages the Debian packages that bring them
 * @property {boolean} [root]    needs root besides (network namespaces, loop mounts)
 * @property {boolean} [aptLists] needs apt's package lists (apt-cache show)
 */

/** @type {Need[]} */
export const NEEDS = [
  { name: 'test/net', kind: 'jest', paths: '<rootDir>/test/net/', commands: ['ip', 'iptables', 'tc', 'ss'], packages: ['iproute2', 'iptables'], root: true },
  { name: 'test/powercut', kind: 'jest', paths: '<rootDir>/test/powercut/', commands: ['mkfs.ext4', 'e2fsck', 'losetup', 'mount', 'umount'], packages: ['e2fsprogs', 'mount'], root: true },
  { name: 'test/web/browser', kind: 'jest', paths: '<rootDir>/test/web/browser/', commands: ['chromium'], packages: ['chromium'] },
  { name: 'test:systemd', kind: 'step', commands: ['podman', 'runc', 'debootstrap', 'lintian'], packages: ['podman', 'runc', 'debootstrap', 'lintian'] },
  { name: 'test:arm', kind: 'step', commands: ['qemu-aarch64-static', 'qemu-arm-static', 'apt-cache', 'dpkg-deb'], packages: ['qemu-user-static'], aptLists: true },
];

const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** A command in the system folders (jest's PATH starts with node_modules/.bin, so it is not asked). */
export function systemCommand(name) {
  for (const dir of SYSTEM_DIRS) if (existsSync(`${dir}/${name}`)) return `${dir}/${name}`;
  return undefined;
}

const isRoot = () => process.getuid?.() === 0;

/** apt has lists to answer `apt-cache show` from (a fresh image may have none). */
function aptListsPresent() {
  const r = spawnSync('apt-cache', ['show', '--no-all-versions', 'dpkg'], { stdio: 'ignore' });
  return r.status === 0;
}

/** Why `need` cannot run on this machine now, or undefined. */
function whyNot(need) {
  const missing = need.commands.filter((c) => systemCommand(c) === undefined);
  if (missing.length > 0) return `${missing.join(', ')} not installed`;
  if (need.root && !isRoot()) return 'needs root';
  if (need.aptLists && !aptListsPresent()) return "apt has no package lists (run 'apt-get update')";
  return undefined;
}

function apt(args) {
  return spawnSync('apt-get', args, { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

/**
 * Installs what the suites need and is missing (root with apt only), then
 * tells what still cannot run. Returns `{ installed, missing }`: `missing` is
 * the needs left out, each with `why` and `fix`.
 */
export function provide({ log = () => {} } = {}) {
  let lacking = NEEDS.filter((n) => whyNot(n) !== undefined);
  const installed = [];
  if (lacking.length > 0 && isRoot() && systemCommand('apt-get') !== undefined) {
    const packages = [...new Set(lacking.flatMap((n) => n.packages))];
    const needLists = lacking.some((n) => n.aptLists) && !aptListsPresent();
    log(`installing ${packages.join(', ')} for ${lacking.map((n) => n.name).join(', ')} (apt-get, once)`);
    // The lists first when they are missing or stale: an install from an old list fails on a moved file.
    if (needLists || apt(['install', '-y', '-q', '--no-install-recommends', ...packages]).status !== 0) {
      apt(['update', '-q']);
      apt(['install', '-y', '-q', '--no-install-recommends', ...packages]);
    }
    installed.push(...lacking.filter((n) => whyNot(n) === undefined).map((n) => n.name));
    lacking = NEEDS.filter((n) => whyNot(n) !== undefined);
  }
  const missing = lacking.map((n) => ({
    ...n,
    why: whyNot(n),
    fix: n.root && !isRoot() ? `run npm test as root (sudo), with ${n.packages.join(' ')} installed` : `apt-get install ${n.packages.join(' ')}${n.aptLists ? ' (after apt-get update)' : ''}`,
  }));
  return { installed, missing };
}

// `node scripts/system-tools.mjs`: install and report, as npm test does first.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { installed, missing } = provide({ log: (l) => process.stdout.write(`system tools: ${l}\n`) });
  for (const n of installed) process.stdout.write(`system tools: ${n} can run now\n`);
  for (const n of missing) process.stdout.write(`system tools: ${n.name} cannot run: ${n.why}; ${n.fix}\n`);
  if (missing.length === 0) process.stdout.write('system tools: every suite can run\n');
  process.exitCode = missing.length === 0 ? 0 : 69;
}
