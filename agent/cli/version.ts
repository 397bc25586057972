import { readFileSync } from 'node:fs';

// Set by scripts/build.mjs; undefined when running from source (jest).
declare const __C2C_VERSION__: string | undefined;

export function agentVersion(): string {
  if (typeof __C2C_VERSION__ !== 'undefined' && __C2C_VERSION__ !== undefined) return __C2C_VERSION__;
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** The oldest Node.js major the bundle is built for (esbuild target node20). */
export const MIN_NODE_MAJOR = 20;

/**
 * The one line to print when `version` (process.versions.node) is too old,
 * else undefined. The unit runs whatever /usr/bin/node is, and Raspberry Pi
 * OS bookworm's apt package is Node 18: without this the agent would fail
 * later with an obscure error, or crash-loop under systemd.
 */
export function checkNodeVersion(version: string): string | undefined {
  const major = /^v?(\d+)\./.exec(version)?.[1];
  // Unparseable: no grounds to refuse; the bundle will say what it cannot run.
  if (major === undefined || Number(major) >= MIN_NODE_MAJOR) return undefined;
  return `c2c-agent needs Node.js >= ${MIN_NODE_MAJOR} (this is ${version}); install Node.js ${MIN_NODE_MAJOR} or later (NodeSource or nodejs.org binaries) as the node the unit runs`;
}
