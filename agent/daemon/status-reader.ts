// The one reader of a status document as this agent writes it: core's
// snapshot and sections, and every section a listed feature declares
// (daemon/features.ts). For status-file.ts, `status` and `queue`.
import { statusDocumentOf, type StatusDocument } from '../core/status-document.js';
import { FEATURES } from './features.js';

const SECTIONS = FEATURES.flatMap((f) => (f.section === undefined ? [] : [f.section]));

export function readStatusDocument(raw: unknown): StatusDocument | undefined {
  return statusDocumentOf(raw, SECTIONS);
}
