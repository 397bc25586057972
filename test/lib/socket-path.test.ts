// lib/socket-path.ts, the one home of a unix socket's length limit (issue
// 30): the local API's server and client each had their own 107, and the
// state lock cut its fallback name at 107 characters, not bytes, so a state
// dir with non-ASCII characters gave a name libuv shortened without a word.
// And listenUnix, how the daemon listens on one without node:cluster.
import { describe, expect, it, jest } from '@jest/globals';
import { existsSync } from 'node:fs';
import { connect, createServer, Server } from 'node:net';
import path from 'node:path';
import { fitSocketName, listenUnix, MAX_SOCKET_PATH_BYTES, socketPathTooLong } from '../../agent/lib/socket-path.js';
import { stateLockName } from '../../agent/daemon/state-lock.js';
import { apiRequest } from '../../agent/localapi/client.js';
import { suiteTempDirs } from '../support/temp-dirs.js';

describe('a unix socket path', () => {
  it('107 bytes fit, 108 do not, counted in bytes', () => {
    expect(socketPathTooLong('/'.padEnd(MAX_SOCKET_PATH_BYTES, 'x'))).toBeUndefined();
    expect(socketPathTooLong('/'.padEnd(MAX_SOCKET_PATH_BYTES + 1, 'x'))).toMatch(/108 bytes, over the 107 a unix socket takes/);
    // 54 characters, 107 bytes: fits; one more two-byte character does not.
    expect(socketPathTooLong(`/${'é'.repeat(53)}`)).toBeUndefined();
    expect(socketPathTooLong(`/${'é'.repeat(54)}`)).toBeDefined();
  });

  it('the client refuses a path the kernel would shorten, in the same words as the server', async () => {
    await expect(apiRequest(`/run/${'é'.repeat(60)}/api.sock`, 'GET', '/v1/status')).rejects.toMatchObject({ code: 'ENAMETOOLONG', message: expect.stringMatching(/over the 107 a unix socket takes/) as unknown as string });
  });

  it('a name is cut to 107 bytes, never inside a character', () => {
    for (const name of [`\0${'é'.repeat(80)}`, `\0${'😀'.repeat(40)}`, `\0${'x'.repeat(200)}`, '\0short']) {
      const fit = fitSocketName(name);
      expect(Buffer.byteLength(fit)).toBeLessThanOrEqual(MAX_SOCKET_PATH_BYTES);
      expect(name.startsWith(fit)).toBe(true);
      expect(Buffer.from(fit).toString('utf8')).toBe(fit);
      expect(Buffer.byteLength(fit)).toBeGreaterThan(Math.min(Buffer.byteLength(name), MAX_SOCKET_PATH_BYTES) - 4);
    }
  });

  it("the state lock's name for a dir it cannot look at fits, however the path is spelt", () => {
    const dir = path.join('/nonexistent', 'caméra-'.repeat(20), 'state');
    const name = stateLockName(dir);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(MAX_SOCKET_PATH_BYTES);
    expect(`\0c2c-agent/state-path/${dir}`.startsWith(name)).toBe(true);
  });
});

describe('listenUnix: a unix socket listened on without node:cluster', () => {
  const tmp = suiteTempDirs('c2c-listen-');
  const listening = (server: Server, name: string): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      listenUnix(server, name, () => resolve());
    });
  const readAll = (name: string): Promise<string> =>
    new Promise((resolve, reject) => {
      let text = '';
      const c = connect(name);
      c.setEncoding('utf8');
      c.on('data', (d: string) => (text += d));
      c.on('end', () => resolve(text));
      c.on('error', reject);
    });

  it('goes by the server\'s _listen2, which every node the agent runs on has (node 20, 22 and 24: scripts/node-versions.mjs runs the daemon on each)', () => {
    // Should a node drop it, listenUnix falls back to listen() and node:cluster loads again: this says so first.
    expect(typeof (Server.prototype as unknown as { _listen2?: unknown })._listen2).toBe('function');
  });

  it('listens on a path as listen() does: bound before it returns, address() gives the path, a client is served, close() removes the file', async () => {
    const dir = tmp();
    const name = path.join(dir, 'api.sock');
    const server = createServer((c) => c.end('hello\n'));
    const listen = jest.spyOn(server, 'listen');
    const up = listening(server, name);
    expect(listen).not.toHaveBeenCalled();
    // Bound synchronously, as listen() binds: the local API sets its umask around the call.
    expect(existsSync(name)).toBe(true);
    await up;
    expect(server.listening).toBe(true);
    expect(server.address()).toBe(name);
    expect(await readAll(name)).toBe('hello\n');
    await new Promise((r) => server.close(r));
    expect(existsSync(name)).toBe(false);
  });

  it('a name in use is the same EADDRINUSE error event listen() gives, and the holder keeps it', async () => {
    const name = `\0c2c-agent/test/listen-${process.pid}-${Date.now()}`;
    const first = createServer((c) => c.end('first\n'));
    await listening(first, name);
    const second = createServer();
    await expect(listening(second, name)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(second.listening).toBe(false);
    expect(await readAll(name)).toBe('first\n');
    await new Promise((r) => first.close(r));
    // Free again: a new server takes it.
    await listening(second, name);
    await new Promise((r) => second.close(r));
  });

  it('a server without _listen2 (a node that dropped it) is given listen()', async () => {
    const dir = tmp();
    const name = path.join(dir, 'fallback.sock');
    const server = createServer((c) => c.end('ok\n'));
    // This node has it: hidden from listenUnix's look only, then given back for listen()'s own use.
    Object.defineProperty(server, '_listen2', { value: undefined, configurable: true });
    const realListen = Server.prototype.listen;
    const listen = jest.spyOn(server, 'listen').mockImplementation((...args: unknown[]) => {
      delete (server as unknown as { _listen2?: unknown })._listen2;
      return realListen.apply(server, args as Parameters<Server['listen']>);
    });
    await listening(server, name);
    expect(listen).toHaveBeenCalledWith(name, expect.any(Function));
    expect(await readAll(name)).toBe('ok\n');
    await new Promise((r) => server.close(r));
  });
});
