// Runs a fuzz target's cases and counts what went wrong. Shared by the jest
// suites (test/fuzz/*.test.ts, a few dozen cases) and the long run
// (scripts/fuzz.mjs): the same generators and oracles either way. Each case
// gets its own PRNG from (seed, case number) and its own temp dir, removed
// after it; a failing case prints its seed, case number and the command
// that replays it alone.
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync } from 'node:fs';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Rng, caseSeed } from './rng.mjs';
import { answersTarget } from './answers.mjs';
import { filesTarget } from './files.mjs';
import { mediaTarget } from './media.mjs';
import { localapiTarget } from './localapi.mjs';
import { killAll } from './proc.mjs';

export { killAll };

export const TARGETS = { answers: answersTarget, files: filesTarget, media: mediaTarget, localapi: localapiTarget };

/** A seed for a fresh run: printed, so the run can be replayed. */
export const freshSeed = () => Math.floor(Math.random() * 2 ** 31);

export const replayCommand = (target, seed, caseNo, extra = '') => `node scripts/fuzz.mjs --target ${target} --seed ${seed} --case ${caseNo}${extra}`;

/**
 * Runs cases of one target. Options: bundle (the agent, dist/c2c-agent.mjs),
 * fakeCloud (dist/fake-cloud.mjs, for 'media'), seed, cases (how many, from
 * case 0), only (one case number: a replay), deadline (epoch ms after which
 * no case starts), jobs (cases at once), log (a line printer), verbose
 * (every case's description, not only failing ones).
 * Resolves with {target, seed, cases, crashes, hangs, wrong, errors, failures, summary}.
 */
export async function runTarget(o) {
  const target = TARGETS[o.target];
  if (target === undefined) throw new Error(`unknown target '${o.target}' (one of ${Object.keys(TARGETS).join(', ')})`);
  const log = o.log ?? ((line) => process.stdout.write(`${line}\n`));
  const numbers = o.only !== undefined ? [o.only] : undefined;
  const counts = { cases: 0, crashes: 0, hangs: 0, wrong: 0, errors: 0 };
  const failures = [];
  let next = 0;
  const take = () => {
    if (o.stop?.()) return undefined;
    if (numbers) return next < numbers.length ? numbers[next++] : undefined;
    if (o.cases !== undefined && next >= o.cases) return undefined;
    if (o.deadline !== undefined && Date.now() >= o.deadline) return undefined;
    return next++;
  };

  async function one(caseNo, bundle, fakeCloud) {
    const tmp = mkdtempSync(path.join(o.tmpRoot ?? tmpdir(), `agentfuzz-${o.target}-`));
    const rng = new Rng(caseSeed(o.seed, caseNo));
    let res;
    try {
      res = await target.runCase({ rng, bundle, fakeCloud, tmp, seed: o.seed, caseNo, log, verbose: o.verbose });
    } catch (err) {
      res = { desc: ['(the fuzzer itself failed)'], problems: [], error: err };
    } finally {
      try {
        rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
      } catch (err) {
        log(`warning: could not remove ${tmp}: ${err}`);
      }
    }
    counts.cases++;
    const cats = new Set(res.problems.map((p) => p.cat));
    if (cats.has('crash')) counts.crashes++;
    if (cats.has('hang')) counts.hangs++;
    if (cats.has('wrong')) counts.wrong++;
    if (res.error) counts.errors++;
    if (res.problems.length > 0 || res.error) {
      failures.push({ caseNo, problems: res.problems, desc: res.desc, error: res.error });
      log(`FAIL ${o.target} seed=${o.seed} case=${caseNo}: ${res.desc[0]}`);
      for (const p of res.problems) log(`  [${p.cat}] ${p.sig}: ${p.msg}`);
      if (res.error) log(`  [fuzzer error] ${res.error?.stack ?? res.error}`);
      for (const d of res.desc.slice(1)) log(`  | ${d}`);
      log(`  replay: ${replayCommand(o.target, o.seed, caseNo, o.replayExtra)}`);
      // A replay shows what the agent printed, to see why.
      if (numbers && res.result) for (const k of ['stdout', 'stderr']) log(`  ${k}: ${String(res.result[k] ?? '').slice(-3000)}`);
    } else if (o.verbose) {
      log(`ok   ${o.target} seed=${o.seed} case=${caseNo}: ${res.desc.join(' | ')}`);
    }
    o.onCase?.(caseNo, res);
  }

  // The run uses its own copy of the bundle: a rebuild of dist/ mid-run (others fix the agent
  // meanwhile) must not mix two agents in one run; the copy's dir is world-readable for cases
  // that run the agent as another user.
  const own = mkdtempSync(path.join(o.tmpRoot ?? tmpdir(), 'agentfuzz-bundle-'));
  chmodSync(own, 0o755);
  const copy = (file, name) => {
    if (file === undefined) return undefined;
    const to = path.join(own, name);
    copyFileSync(file, to);
    chmodSync(to, 0o644);
    return to;
  };
  const bundle = copy(o.bundle, 'c2c-agent.mjs');
  const fakeCloud = copy(o.fakeCloud, 'fake-cloud.mjs');
  const bundleId = createHash('sha256').update(readFileSync(bundle)).digest('hex').slice(0, 12);
  log(`${o.target}: seed ${o.seed}, bundle ${o.bundle} (sha256 ${bundleId})`);
  const workers = Array.from({ length: Math.max(1, o.jobs ?? 1) }, async () => {
    for (let n = take(); n !== undefined; n = take()) await one(n, bundle, fakeCloud);
  });
  try {
    await Promise.all(workers);
  } finally {
    await killAll();
    rmSync(own, { recursive: true, force: true });
  }
  const summary = `${o.target}: ${counts.cases} cases, ${counts.crashes} crashes, ${counts.hangs} hangs, ${counts.wrong} wrong${counts.errors ? `, ${counts.errors} fuzzer errors` : ''}`;
  return { target: o.target, seed: o.seed, ...counts, failures, summary, groups: groupFailures(failures) };
}

/** Failures by signature: how many cases, and the first case of each (to replay). */
export function groupFailures(failures) {
  const groups = new Map();
  for (const f of failures) {
    for (const p of f.problems) {
      const g = groups.get(p.sig) ?? { sig: p.sig, cat: p.cat, cases: 0, first: f.caseNo, example: p.msg };
      g.cases++;
      groups.set(p.sig, g);
    }
    if (f.error) {
      const g = groups.get('fuzzer-error') ?? { sig: 'fuzzer-error', cat: 'error', cases: 0, first: f.caseNo, example: String(f.error?.message ?? f.error) };
      g.cases++;
      groups.set('fuzzer-error', g);
    }
  }
  return [...groups.values()].sort((a, b) => b.cases - a.cases);
}
