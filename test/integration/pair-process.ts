// One-shot commands of the built bundle (pair, unpair, check) as real child
// processes whose stdout is read while they run: `pair --json` is driven by
// its JSON Lines (approve the code it shows, signal it while it polls).
// Daemons, status and the build come from agent-process.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE, cleanEnv, waitFor, type AgentDirs } from './agent-process.js';

export type JsonEvent = Record<string, unknown> & { event?: string };

export interface CommandProcess {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  /** Complete stdout lines so far. */
  lines(): string[];
  /** Complete stdout lines parsed as JSON (throws on a line that is not JSON: --json promises JSON Lines). */
  events(): JsonEvent[];
  /** The first event matching `pred` (searching from index `from`), waiting for it. */
  waitForEvent(what: string, pred: (e: JsonEvent) => boolean, timeoutMs?: number, from?: number): Promise<JsonEvent>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stdout, stderr and the exit, for failure messages. */
  describe(): string;
}

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  events: JsonEvent[];
}

export interface AgentSettings {
  apiUrl: string;
  dirs: AgentDirs;
  timeScale: number;
  secretFile?: string;
}

/** The settings flags every command here takes; the config file of makeDirs() keeps /etc out. */
export function settingsArgs(s: AgentSettings): string[] {
  return [
    '--api-url',
    s.apiUrl,
    '--state-dir',
    s.dirs.stateDir,
    '--runtime-dir',
    s.dirs.runtimeDir,
    '--time-scale',
    String(s.timeScale),
    ...(s.secretFile !== undefined ? ['--client-secret-file', s.secretFile] : []),
  ];
}

const live = new Set<ChildProcess>();

export function startCommand(args: string[], dirs: AgentDirs, env: Record<string, string> = {}): CommandProcess {
  const child = spawn(process.execPath, [BUNDLE, ...args], {
    env: cleanEnv({ C2C_CONFIG: join(dirs.root, 'config.json'), ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error('could not spawn the agent');
  live.add(child);
  let out = '';
  let err = '';
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    // 'close': both pipes drained, so stdout() holds everything the process wrote.
    child.once('close', (code, signal) => {
      live.delete(child);
      exit = { code, signal };
      res(exit);
    });
  });
  const lines = (): string[] => {
    const all = out.split('\n');
    all.pop(); // the part after the last newline is not a complete line yet
    return all;
  };
  const events = (): JsonEvent[] => lines().map((l) => JSON.parse(l) as JsonEvent);
  const describe = (): string => `exit ${JSON.stringify(exit ?? 'running')}\n--- stdout\n${out}--- stderr\n${err}`;
  return {
    child,
    pid: child.pid,
    stdout: () => out,
    stderr: () => err,
    lines,
    events,
    exited,
    describe,
    async waitForEvent(what, pred, timeoutMs = 10_000, from = 0) {
      try {
        return await waitFor(
          what,
          () => {
            const found = events().slice(from).find(pred);
            if (found !== undefined) return found;
            if (exit !== undefined) throw new Error(`the process exited before ${what}`);
            return undefined;
          },
          timeoutMs,
        );
      } catch (e) {
        throw new Error(`${(e as Error).message}\n${describe()}`);
      }
    },
  };
}

export async function runCommand(args: string[], dirs: AgentDirs, env: Record<string, string> = {}, timeoutMs = 20_000): Promise<CommandResult> {
  const p = startCommand(args, dirs, env);
  const killer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  try {
    const { code, signal } = await p.exited;
    let events: JsonEvent[] = [];
    try {
      events = p.events();
    } catch {
      // not JSON output: the caller looks at stdout
    }
    return { code, signal, stdout: p.stdout(), stderr: p.stderr(), events };
  } finally {
    clearTimeout(killer);
  }
}

/** SIGKILL every command still running (afterEach). */
export async function killCommands(): Promise<void> {
  const waits: Array<Promise<unknown>> = [];
  for (const c of live) {
    if (c.exitCode === null && c.signalCode === null) {
      waits.push(new Promise((r) => c.once('close', r)));
      c.kill('SIGKILL');
    }
  }
  live.clear();
  await Promise.all(waits);
}

/** The device model's secret as the installer stores it: a regular file, mode 0600 unless told otherwise. */
export function writeSecretFile(dirs: AgentDirs, secret: string, mode = 0o600, name = 'client-secret'): string {
  const file = join(dirs.root, name);
  writeFileSync(file, `${secret}\n`, { mode });
  chmodSync(file, mode); // the umask may have taken bits away from writeFileSync's mode
  return file;
}

/** Secrets the fake issues carry these prefixes (device codes, access and refresh tokens, client secrets). */
export const FAKE_SECRET = /\bfc[dars]_[A-Za-z0-9_-]{8,}/;
