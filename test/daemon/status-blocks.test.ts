// Issue 29 in `status`: what keeps the camera from uploading has a line of
// its own (human) and is in the document (--json), and a cancelled upload is
// counted as cancelled, never as dead-lettered. Read from a status file as
// a daemon writes it (core/status-document.ts), through the status command.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { run as statusCommand } from '../../agent/cli/status.js';
import type { CommandContext } from '../../agent/cli/command.js';
import { statusFile } from '../../agent/daemon/runtime/status-file.js';
import { SystemClock } from '../../agent/lib/clock.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'c2c-status-blocks-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function status(json: boolean): Promise<{ code: number; out: string; obj?: Record<string, unknown> }> {
  const out: string[] = [];
  jest.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  const ctx: CommandContext = { name: 'status', values: { json }, positionals: [], settingsOptions: { runtimeDir: dir }, json, env: {} };
  const code = await statusCommand(ctx);
  jest.restoreAllMocks();
  const text = out.join('');
  return { code, out: text, ...(json && { obj: JSON.parse(text) as Record<string, unknown> }) };
}

function writeDoc(extra: Record<string, unknown>): number {
  const now = new SystemClock().now();
  const at = new Date().toISOString();
  const m = { at, monotonic: now };
  writeFileSync(
    statusFile(dir),
    JSON.stringify({ state: 'online', reason: 'heartbeat accepted', since: m, pid: process.pid, started: m, device: { id: 'd1', name: 'cam', status: 'online' }, consecutiveFailures: 0, firmwareVersion: '1.0.0', agentVersion: '0.1.0', timeScale: 1, updated: m, ...extra }),
  );
  return now;
}

const count = (items: number, bytes = items * 10) => ({ items, bytes });
const byKindWith = (o: Record<string, ReturnType<typeof count>>) => ({ upload: { pending: count(0), done: count(0), dead: count(0), cancelled: count(0), dropped: count(0), ...o } });
const queueOf = (byKind: unknown) => ({ byKind, oldestPending: null, dropped: {}, quarantined: 0, diskBytes: 30, unwritten: 0, liveBytes: 0, inFlight: [], attempts: {} });

describe('status says what keeps uploads from going', () => {
  it('storage refusing: "1 file waiting", never "uploading", and a line with the reason and since when (wall time and ago)', async () => {
    const now = writeDoc({});
    const since = { at: '2026-01-01T10:00:00.000Z', monotonic: now - 125_000 };
    writeDoc({ uploads: { files: 1, bytesLeft: 1_000_000, bytesPerSecond: 0, blocked: [{ kind: 'refused', since, attempts: 6, reason: 'storage answered 503 to PUT part 1' }] } });
    const h = await status(false);
    expect(h.out).toMatch(/^uploads: +1 file waiting, 977 KiB left$/m);
    expect(h.out).not.toMatch(/uploading/);
    expect(h.out).toMatch(/^not sent: +refused: 6 attempts in a row failed since 2026-01-01T10:00:00\.000Z \(2m[0-5][0-9]s ago\); last: storage answered 503 to PUT part 1$/m);
    const j = await status(true);
    expect(j.obj).toMatchObject({ uploads: { blocked: [{ kind: 'refused', since, attempts: 6, reason: 'storage answered 503 to PUT part 1' }] } });
  });

  it('no media dir, auto-upload off with the clips waiting, the window closed until when', async () => {
    const now = writeDoc({});
    const until = { at: '2026-01-01T22:00:00.000Z', monotonic: now + 3 * 3_600_000 };
    writeDoc({ uploads: { files: 0, bytesLeft: 0, bytesPerSecond: 0, blocked: [{ kind: 'no-media-dir' }, { kind: 'auto-upload-off', waiting: 4 }, { kind: 'window-closed', until }, { kind: 'a-later-kind' }] } });
    const h = await status(false);
    expect(h.out).toMatch(/^uploads: +none waiting$/m);
    expect(h.out).toMatch(/^media dir: +none set: clips are not uploaded by themselves, only files given to c2c-agent upload \(set mediaDir\)$/m);
    expect(h.out).toMatch(/^auto-upload: off: 4 clips found are not queued until it is on \(c2c-agent prefs autoUpload=on\)$/m);
    expect(h.out).toMatch(/^window: +upload window closed until 2026-01-01T22:00:00\.000Z \(in (2h59m|3h00m)\): uploads wait for it$/m);
    // A kind this agent does not know is left out; the rest kept.
    expect((await status(true)).obj).toMatchObject({ uploads: { blocked: [{ kind: 'no-media-dir' }, { kind: 'auto-upload-off', waiting: 4 }, { kind: 'window-closed', until }] } });
  });

  it('a cancelled upload is counted as cancelled, not dead-lettered', async () => {
    writeDoc({ queue: queueOf(byKindWith({ cancelled: count(1) })) });
    const h = await status(false);
    expect(h.out).toMatch(/^queue: +0 pending, 1 cancelled$/m);
    expect(h.out).not.toMatch(/dead-lettered/);
    writeDoc({ queue: queueOf(byKindWith({ pending: count(2), dead: count(1), cancelled: count(3) })) });
    expect((await status(false)).out).toMatch(/^queue: +2 pending, 1 dead-lettered \(see c2c-agent queue\), 3 cancelled$/m);
  });
});
