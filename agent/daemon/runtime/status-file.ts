// status.json in the runtime dir (tmpfs, cleared at boot): the daemon's
// live state for `c2c-agent status`. Nothing here goes to the state dir, so a
// healthy camera never writes to its SD card.
import path from 'node:path';
import { READ_LIMITS, readBoundedTextSync } from '../../lib/bounded-read.js';
import { AgentError } from '../../lib/errors.js';
import { errnoOf } from '../../lib/fs-errors.js';
import type { StatusDocument } from '../../core/status-document.js';
import { readStatusDocument } from '../status-reader.js';
import { FileSink } from './file-sink.js';

export const STATUS_FILE = 'status.json';

export function statusFile(runtimeDir: string): string {
  return path.join(runtimeDir, STATUS_FILE);
}

export function createStatusSink(runtimeDir: string, onError?: (err: unknown) => void): FileSink<StatusDocument> {
  return new FileSink<StatusDocument>(statusFile(runtimeDir), onError);
}

/**
 * 'unreadable' with `cause`: the file could not be read at all (permissions,
 * a FIFO or device in its place, a runtime dir that is not a directory), one
 * line naming it; without: it was read but is not a status file.
 */
export type StatusRead = { kind: 'missing' } | { kind: 'unreadable'; error: string; cause?: AgentError } | { kind: 'ok'; doc: StatusDocument };

/** `source`: the setting that gave the runtime dir, for messages. */
export function readStatus(runtimeDir: string, source?: string): StatusRead {
  let text: string;
  try {
    text = readBoundedTextSync(statusFile(runtimeDir), { what: 'status file', maxBytes: READ_LIMITS.status, source });
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT') return { kind: 'missing' };
    return err instanceof AgentError ? { kind: 'unreadable', error: code ?? err.message, cause: err } : { kind: 'unreadable', error: String(err) };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { kind: 'unreadable', error: 'not JSON' };
  }
  // Checked field by field (core/status-document.ts): an older agent's file, or garbage, is never taken on trust.
  const doc = readStatusDocument(raw);
  return doc === undefined ? { kind: 'unreadable', error: 'not a status file' } : { kind: 'ok', doc };
}

