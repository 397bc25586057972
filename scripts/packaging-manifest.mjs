// Reads packaging/files.list, the one list of what c2c-agent installs (its
// format is described at the top of that file; scripts/install.sh reads it
// with sed and a shell loop).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The entries with their files expanded: `dirs` fills @unitdir@ and @bindir@,
 * `distDir` replaces the repository's dist/ (as C2C_DIST_DIR does for install.sh).
 * @returns {{ kind: 'file' | 'config', mode: number, files: { from: string, to: string }[] }[]}
 */
export function readManifest(root, dirs, distDir = path.join(root, 'dist')) {
  const text = readFileSync(path.join(root, 'packaging/files.list'), 'utf8');
  return text
    .split('\n')
    .filter((line) => !/^\s*(#|$)/.test(line))
    .map((line) => {
      const [kind, mode, source, target, extra] = line.trim().split(/\s+/);
      if (extra !== undefined || target === undefined || (kind !== 'file' && kind !== 'config') || !/^0[0-7]{3}$/.test(mode)) {
        throw new Error(`packaging/files.list: cannot read the line ${JSON.stringify(line)}`);
      }
      const to = target.replace('@unitdir@', dirs.unitdir).replace('@bindir@', dirs.bindir);
      const from = source.startsWith('dist/') ? path.join(distDir, source.slice(5)) : path.join(root, source);
      return { kind, mode: Number.parseInt(mode, 8), files: expand(from, to) };
    });
}

/** Only the last part of a source may be a pattern (`*` matching any run of characters). */
function expand(from, to) {
  const base = path.basename(from);
  if (!base.includes('*')) return [{ from, to }];
  const re = new RegExp(`^${base.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  const dir = path.dirname(from);
  return readdirSync(dir)
    .filter((name) => re.test(name))
    .sort()
    .map((name) => ({ from: path.join(dir, name), to: path.posix.join(to, name) }));
}
