// A stand-in for PID 1's notify socket: scripts/lib/notify-listener.py prints
// each datagram as a JSON string on its own line.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PY = fileURLToPath(new URL('../../scripts/lib/notify-listener.py', import.meta.url));

export interface NotifyListener {
  /** Every datagram received so far, in order. */
  messages: string[];
  close(): void;
}

export async function listenNotify(path: string): Promise<NotifyListener> {
  const proc: ChildProcess = spawn('python3', [PY, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  const messages: string[] = [];
  let buf = '';
  let ready: () => void = () => {};
  const listening = new Promise<void>((r) => (ready = r));
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = JSON.parse(buf.slice(0, i)) as string;
      buf = buf.slice(i + 1);
      if (line === 'listening') ready();
      else messages.push(line);
    }
  });
  const failed = new Promise<never>((_, reject) => proc.once('exit', (code) => reject(new Error(`notify listener exited (${code})`))));
  await Promise.race([listening, failed]);
  failed.catch(() => {});
  return { messages, close: () => void proc.kill('SIGKILL') };
}
