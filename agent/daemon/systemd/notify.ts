// systemd's notify protocol (sd_notify(3)) without a native addon: Node has
// no API for sending a datagram on a unix socket, and an addon cannot live in
// the single-file bundle, so every message is one `systemd-notify` child
// (execFile, no shell: the status text is never parsed by a shell).
//
// The invocation, and why (systemd 252 on Debian 12 / Raspberry Pi OS
// bookworm; `--exec`/`--fork` only arrived in 254, so they are not used):
//
// - PID 1 attributes a notify message to a unit by looking up the *sender's*
//   cgroup. A short-lived systemd-notify that has already exited when PID 1
//   reads the datagram cannot be attributed and the message is dropped, even
//   with NotifyAccess=all (systemd issue #2737, the note in sd_notify(3)).
// - Since 246, systemd-notify *without* `--no-block` follows its message with
//   sd_notify_barrier(): it sends BARRIER=1 with a pipe fd and waits until
//   PID 1 has closed it, i.e. until PID 1 has processed everything sent
//   before. The child is therefore still alive while its message is read,
//   which closes the race. So: never `--no-block`.
// - systemd-notify first tries to send with the credentials of its parent (us,
//   the main PID; execFile spawns it directly) and falls back to its own PID;
//   the first needs privileges our hardened unit does not have, so in
//   production the sender is the child and the unit needs NotifyAccess=all.
//   (Checked on 252 as uid 65534 with no capabilities and no_new_privs: the
//   message and its BARRIER=1 both carry the child's own PID.)
// - `--pid=` is not used: it only adds MAINPID=, which is already us
//   (ExecStart runs node itself), and buys no attribution.
//
// Calls are serialised (one child at a time, in order) and a burst of STATUS=
// updates collapses to the newest text, so a chatty controller cannot fork a
// storm on a Pi Zero.
import { builtin } from '../../lib/builtin.js';
import { oneLine } from '../../lib/text.js';

export interface SystemdNotifier {
  /** NOTIFY_SOCKET is set: we run under systemd with Type=notify. */
  readonly enabled: boolean;
  /** Real ms between WATCHDOG=1 pings (half of WATCHDOG_USEC), when the watchdog is ours. */
  readonly watchdogIntervalMs: number | undefined;
  ready(status?: string): Promise<void>;
  status(text: string): Promise<void>;
  watchdog(): Promise<void>;
  stopping(): Promise<void>;
  /** Resolves once every message queued so far has been sent (or failed). */
  idle(): Promise<void>;
}

/** Runs systemd-notify with these arguments; rejects when it fails. */
export type NotifyExec = (args: readonly string[], env: NodeJS.ProcessEnv) => Promise<void>;

// The barrier waits up to 5 s for PID 1; past that something is badly wrong
// and a stuck child must not hold the queue forever.
const CHILD_TIMEOUT_MS = 10_000;

export const execSystemdNotify: NotifyExec = async (args, env) => {
  // Loaded with the first message: a daemon that systemd does not supervise never loads it.
  const { execFile } = builtin<typeof import('node:child_process')>('node:child_process');
  return new Promise((resolve, reject) => {
    execFile('systemd-notify', [...args], { env, timeout: CHILD_TIMEOUT_MS, windowsHide: true }, (err, _stdout, stderr) => {
      if (err === null) return resolve();
      const detail = String(stderr).trim().split('\n')[0] ?? '';
      reject(new Error(`systemd-notify ${args.join(' ')} failed: ${detail || err.message}`));
    });
  });
};

/** Half of WATCHDOG_USEC in ms, if the watchdog is enabled for this process. */
export function watchdogIntervalFrom(env: NodeJS.ProcessEnv, pid = process.pid): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!env.WATCHDOG_USEC || !Number.isFinite(usec) || usec <= 0) return undefined;
  // WATCHDOG_PID names the process the watchdog is meant for; a child that
  // inherited the variables must not ping on its parent's behalf.
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return usec / 1000 / 2;
}


// One line per STATUS=: a newline would start a new variable in the datagram.
const STATUS_MAX = 400;

interface Pending {
  kind: 'ready' | 'status' | 'watchdog' | 'stopping';
  args: string[];
  waiters: Array<() => void>;
}

class Notifier implements SystemdNotifier {
  readonly enabled: boolean;
  readonly watchdogIntervalMs: number | undefined;
  private queue: Pending[] = [];
  private running = false;
  private drained: Array<() => void> = [];

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly exec: NotifyExec,
    private readonly onError: (err: unknown) => void,
  ) {
    this.enabled = Boolean(env.NOTIFY_SOCKET);
    this.watchdogIntervalMs = this.enabled ? watchdogIntervalFrom(env) : undefined;
  }

  ready(status?: string): Promise<void> {
    const args = ['--ready'];
    if (status !== undefined) args.push(`--status=${oneLine(status, STATUS_MAX)}`);
    return this.send('ready', args);
  }

  status(text: string): Promise<void> {
    return this.send('status', [`--status=${oneLine(text, STATUS_MAX)}`]);
  }

  watchdog(): Promise<void> {
    return this.send('watchdog', ['WATCHDOG=1']);
  }

  stopping(): Promise<void> {
    return this.send('stopping', ['STOPPING=1']);
  }

  idle(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  private send(kind: Pending['kind'], args: string[]): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    return new Promise((resolve) => {
      const last = this.queue[this.queue.length - 1];
      // Only an unsent tail entry of the same kind is merged, so the order of
      // different messages (READY before STOPPING...) is never changed.
      if (last !== undefined && last.kind === kind && (kind === 'status' || kind === 'watchdog')) {
        last.args = args;
        last.waiters.push(resolve);
      } else {
        this.queue.push({ kind, args, waiters: [resolve] });
      }
      if (!this.running) void this.pump();
    });
  }

  private async pump(): Promise<void> {
    this.running = true;
    for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
      try {
        await this.exec(next.args, this.env);
      } catch (err) {
        try {
          this.onError(err);
        } catch {
          // A failing error reporter must not stop the queue.
        }
      }
      for (const w of next.waiters) w();
    }
    this.running = false;
    for (const d of this.drained.splice(0)) d();
  }
}

/**
 * A notifier for this process. Its methods never reject: a failed message is
 * handed to `onError` (the daemon logs it) and the daemon carries on, since
 * losing a STATUS= line must never take the camera offline.
 */
export function createSystemdNotifier(
  env: NodeJS.ProcessEnv = process.env,
  exec: NotifyExec = execSystemdNotify,
  onError: (err: unknown) => void = () => {},
): SystemdNotifier {
  return new Notifier(env, exec, onError);
}
