// Test helpers for the packaging suites: a stand-in bundle, and a tree's
// listing (path, type, mode, content hash) to compare two installs by.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A dist/ whose bundle answers --help like the real one, so no build is needed. */
export function standInDist(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'c2c-agent.mjs'), "process.stdout.write('usage: c2c-agent <command> [options]\\n  c2c-agent run   the daemon\\n');\n");
  // The daemon's own file, what the unit's ExecStart runs.
  writeFileSync(join(dir, 'c2c-agentd.cjs'), "require('./c2c-agentd-main.cjs');\n");
  writeFileSync(join(dir, 'c2c-agentd-main.cjs'), "process.stdout.write('usage: c2c-agent run\\n');\n");
  return dir;
}

/** Every path under `root` with its type and mode, and a hash of each file's bytes. */
export function listing(root: string, rel = ''): string[] {
  return readdirSync(join(root, rel), { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((d) => {
      const p = rel === '' ? d.name : `${rel}/${d.name}`;
      const mode = (statSync(join(root, p)).mode & 0o7777).toString(8);
      if (d.isDirectory()) return [`${p}/ ${mode}`, ...listing(root, p)];
      const hash = createHash('sha256').update(readFileSync(join(root, p))).digest('hex').slice(0, 16);
      return [`${p} ${mode} ${hash}`];
    });
}

export function paths(list: string[]): string[] {
  return list.map((line) => line.split(' ')[0] as string);
}
