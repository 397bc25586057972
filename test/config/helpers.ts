import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AgentError } from '../../agent/lib/errors.js';

/** A temp dir removed by the returned cleanup; files written relative to it. */
export function tempDir(prefix = 'c2c-config-'): { dir: string; write: (name: string, text: string) => string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return {
    dir,
    write: (name, text) => {
      const file = path.join(dir, name);
      writeFileSync(file, text);
      return file;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Runs fn, expecting an AgentError; returns it so tests can check kind, exit code and message. */
export function configFailure(fn: () => unknown): AgentError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected an AgentError, got none');
}

/** A minimal valid firmware profile (JSON shape), for tests to copy and break. */
export const VALID_PROFILE = {
  id: 'cam',
  name: 'Camera',
  minFirmware: '1.0.0',
  assetType: 'video',
  heartbeat: { minSeconds: 60, maxSeconds: 120 },
  channels: [{ key: 'main', name: 'Main', assetType: 'video', deviceModelId: 'm-1', detect: { anyPath: ['dev/video0'] } }],
  requiredMetadata: ['scene'],
};
