// Where the outbox lives: one home for the folder's name.
import path from 'node:path';

export function queueDirOf(stateDir: string): string {
  return path.join(stateDir, 'queue');
}
