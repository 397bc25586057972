// Fuzzer 2 (issue 18): every command with hostile local files: configs,
// profiles, credentials, state and runtime dirs (test/fuzz/lib/files.mjs).
// Long run: node scripts/fuzz.mjs --target files.
//
// Why a process: the breakages are a process's (FIFOs, device nodes,
// read-only and full mounts in a namespace of its own, a command run as
// nobody) and so are the oracles (exit codes, one line on stderr, RSS, a
// hang). Outcomes only: SIGTERM goes once the daemon has its handler, and
// real-time waits are bounds against a hang (docs/testing.md, "In-process or
// a process").
import { expect, test } from '@jest/globals';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUNDLE, ensureBuilt } from '../integration/agent-process.js';
import { fuzzSuite } from './fuzz-suite.js';
import { nulPathSweep } from './lib/files.mjs';

fuzzSuite({ target: 'files', seeds: [1, 2, 3], casesPerSeed: 8, jobs: 2, timeoutMs: 300_000 });

// Issue 27: a NUL byte in the runtime dir's path ended `run` with exit 1. The
// seeded cases above draw it rarely; every path setting gets it once here.
test('every path setting with a NUL byte (from the config file): exit 78 naming it, for each command', async () => {
  await ensureBuilt();
  // Its own copy: a rebuild of dist/ meanwhile must not swap the agent under a case.
  const own = mkdtempSync(path.join(tmpdir(), 'agentfuzz-nul-bundle-'));
  const bundle = path.join(own, 'c2c-agent.mjs');
  copyFileSync(BUNDLE, bundle);
  const lines: string[] = [];
  try {
    const r = await nulPathSweep({ bundle, log: (l: string) => lines.push(l) });
    expect(r.settings).toEqual(expect.arrayContaining(['stateDir', 'runtimeDir', 'mediaDir', 'tokenFile', 'clientSecretFile', 'firmwareVersionFile', 'profilesDir', 'hostRoot', 'caFile', 'uploadRoots']));
    expect({ failures: r.failures.map((f) => `${f.desc[0]}: ${f.problems.map((p) => p.msg).join('; ')}`), log: r.failures.length > 0 ? lines : [] }).toEqual({ failures: [], log: [] });
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
}, 120_000);
