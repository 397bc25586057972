// status.json in the runtime dir (tmpfs, cleared at boot): the daemon's
// live state for `c2c-agent status`. Nothing here goes to the state dir, so a
// healthy camera never writes to its SD card.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DaemonSnapshot } from '../snapshot.js';
import { FileSink } from './file-sink.js';

export const STATUS_FILE = 'status.json';

export function statusFile(runtimeDir: string): string {
  return path.join(runtimeDir, STATUS_FILE);
}

export function createStatusSink(runtimeDir: string, onError?: (err: unknown) => void): FileSink<DaemonSnapshot> {
  return new FileSink<DaemonSnapshot>(statusFile(runtimeDir), onError);
}

export type StatusRead = { kind: 'missing' } | { kind: 'unreadable'; error: string } | { kind: 'ok'; snapshot: DaemonSnapshot };

export function readStatus(runtimeDir: string): StatusRead {
  let text: string;
  try {
    text = readFileSync(statusFile(runtimeDir), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? { kind: 'missing' } : { kind: 'unreadable', error: code ?? String(err) };
  }
  try {
    const snap = JSON.parse(text) as DaemonSnapshot;
    if (snap === null || typeof snap !== 'object' || typeof snap.state !== 'string' || typeof snap.pid !== 'number') {
      return { kind: 'unreadable', error: 'not a status file' };
    }
    return { kind: 'ok', snapshot: snap };
  } catch {
    return { kind: 'unreadable', error: 'not JSON' };
  }
}

