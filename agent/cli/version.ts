import { readFileSync } from 'node:fs';

// Set by scripts/build.mjs; undefined when running from source (jest).
declare const __C2C_VERSION__: string | undefined;

export function agentVersion(): string {
  if (typeof __C2C_VERSION__ !== 'undefined' && __C2C_VERSION__ !== undefined) return __C2C_VERSION__;
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
