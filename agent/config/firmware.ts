// The firmware version the agent presents (x-client-version). The service
// picks the device-model configuration from it, so a silently coerced value
// ("v1.2" read as 1.2.0) would select the wrong model: we accept strict
// semver only and name the source of anything else.
import valid from 'semver/functions/valid.js';
import { READ_LIMITS, readBoundedTextSync } from '../lib/bounded-read.js';
import { configError } from '../lib/errors.js';
import { quote } from '../lib/text.js';

// The official semver.org grammar. semver.valid() alone is not enough: it
// accepts a leading 'v' or '=' and surrounding whitespace.
const STRICT_SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

export const DEFAULT_FIRMWARE_VERSION = '0.0.0';

export function isStrictSemver(value: string): boolean {
  return value.length <= 256 && STRICT_SEMVER.test(value) && valid(value) !== null;
}

/** Throws a config error naming `source` unless `value` is strict semver. */
export function assertStrictSemver(value: string, source: string, what = 'firmware version'): string {
  if (!isStrictSemver(value)) {
    throw configError(
      `${what} ${quote(value)} from ${source} is not strict semver (expected MAJOR.MINOR.PATCH, e.g. 1.4.2)`,
      source,
    );
  }
  return value;
}

/**
 * Reads the first line of a firmware version file (CR/LF stripped, nothing
 * else). `source` is the setting that named the file; a file past
 * READ_LIMITS.firmwareVersion is refused before it is read.
 */
export function readFirmwareVersionFile(file: string, source = 'firmwareVersionFile'): string {
  const text = readBoundedTextSync(file, { what: 'firmware version file', maxBytes: READ_LIMITS.firmwareVersion, source });
  const first = text.split(/\r?\n/, 1)[0] ?? '';
  return assertStrictSemver(first, `${file} (firmwareVersionFile)`);
}
