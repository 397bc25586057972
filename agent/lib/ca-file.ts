// The `caFile` setting's file: PEM certificates of the CAs a private
// deployment's service (or storage) is signed by, read within a bound and
// checked at load, so a bad file stops a command at once with one line and
// exit 78 instead of failing every request later. api/trust.ts adds them to
// the system's roots.
import { X509Certificate } from 'node:crypto';
import { READ_LIMITS, readBoundedTextSync } from './bounded-read.js';
import { configError } from './errors.js';
import { quotePath } from './text.js';

export const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Extra trusted certificates (PEM), and where they came from, for messages. */
export interface ExtraCas {
  file: string;
  pem: string;
  source: string;
}

/** The certificates in a PEM text; throws a config error (78) naming the file when there is none or one is not a certificate. */
export function parseCaPem(text: string, file: string, source: string): string[] {
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    throw configError(`CA file ${quotePath(file)} from ${source} holds no PEM certificate (-----BEGIN CERTIFICATE-----); give the CA's certificate in PEM form`, source);
  }
  blocks.forEach((b, i) => {
    try {
      new X509Certificate(b);
    } catch {
      throw configError(`CA file ${quotePath(file)} from ${source}: certificate ${i + 1} of ${blocks.length} is not a valid X.509 certificate; give the CA's certificate in PEM form`, source);
    }
  });
  return blocks;
}

/** Reads and checks the `caFile` setting's file (within a bound; a bad file is one line and exit 78). */
export function readCaFile(file: string, source: string): ExtraCas {
  const text = readBoundedTextSync(file, { what: 'CA file', maxBytes: READ_LIMITS.caFile, source });
  return { file, pem: parseCaPem(text, file, source).join('\n'), source };
}

