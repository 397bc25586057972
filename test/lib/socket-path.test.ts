// lib/socket-path.ts, the one home of a unix socket's length limit (issue
// 30): the local API's server and client each had their own 107, and the
// state lock cut its fallback name at 107 characters, not bytes, so a state
// dir with non-ASCII characters gave a name libuv shortened without a word.
import { describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { fitSocketName, MAX_SOCKET_PATH_BYTES, socketPathTooLong } from '../../agent/lib/socket-path.js';
import { stateLockName } from '../../agent/daemon/state-lock.js';
import { apiRequest } from '../../agent/localapi/client.js';

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
