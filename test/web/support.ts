// What the web page's suites share: a port free on loopback.
import { createServer } from 'node:net';

/** A port free on loopback now (asked of the kernel, then let go): webListen takes no port 0. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
