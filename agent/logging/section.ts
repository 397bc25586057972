// The status document's `logging` section, declared once: its type and its
// reader's check (core/shape.ts). A file of its own so `status` reads it
// without the host's code.
import { count, obj, type ShapeOf } from '../core/shape.js';

/** Presses and comments waiting to be sent, sent, and failed for good. */
export const loggingSection = obj({ pending: count, sent: count, failed: count });
export type LoggingSection = ShapeOf<typeof loggingSection>;

declare module '../core/status-document.js' {
  interface StatusSections {
    logging: LoggingSection;
  }
}
