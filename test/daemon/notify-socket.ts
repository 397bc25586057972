// A stand-in for PID 1's notify socket: python3 (Node has no unix datagram
// sockets) binds a SOCK_DGRAM socket, prints each datagram as a JSON string
// on its own line, and closes any fd passed with it, as PID 1 does with
// systemd-notify's barrier fd (without that, systemd-notify would sit out
// its 5 s barrier timeout).
import { spawn, type ChildProcess } from 'node:child_process';

const PY = `
import socket, sys, os, array, json
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print(json.dumps("listening"), flush=True)
while True:
    msg, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(64))
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds = array.array('i'); fds.frombytes(data[:len(data) - len(data) % 4])
            for fd in fds: os.close(fd)
    print(json.dumps(msg.decode()), flush=True)
`;

export interface NotifyListener {
  /** Every datagram received so far, in order. */
  messages: string[];
  close(): void;
}

export async function listenNotify(path: string): Promise<NotifyListener> {
  const proc: ChildProcess = spawn('python3', ['-c', PY, path], { stdio: ['ignore', 'pipe', 'inherit'] });
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
