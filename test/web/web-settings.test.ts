// The webListen setting (with webCertFile and webKeyFile): off unless set,
// HOST:PORT checked at load, and a bad value one line naming the value and
// where it came from, exit 78 (docs/web-page.md; docs/configuration.md).
import { afterAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { loadSettings } from '../../agent/config/settings.js';
import { EXIT } from '../../agent/lib/errors.js';
import { configFailure, tempDir } from '../config/helpers.js';

const t = tempDir('c2c-web-settings-');
afterAll(() => t.cleanup());
const config = t.write('config.json', '{}\n');
const load = (env: Record<string, string>, opts: Record<string, string> = {}) => loadSettings({ apiUrl: 'https://a.example', config, ...opts }, env);

describe('webListen', () => {
  it('is off unless set, and off when set to off', () => {
    expect(load({}).web).toBeUndefined();
    expect(load({ C2C_WEB_LISTEN: 'off' }).web).toBeUndefined();
    expect(load({ C2C_WEB_LISTEN: 'OFF' }).web).toBeUndefined();
  });

  it('takes HOST:PORT from the option, the environment or the config file, IPv6 in brackets', () => {
    expect(load({ C2C_WEB_LISTEN: '0.0.0.0:8080' }).web).toEqual({ listen: '0.0.0.0:8080', host: '0.0.0.0', port: 8080, source: 'environment C2C_WEB_LISTEN' });
    expect(load({}, { webListen: '[::]:80' }).web).toMatchObject({ host: '::', port: 80, source: '--web-listen' });
    expect(load({}, { webListen: 'localhost:8443' }).web).toMatchObject({ host: 'localhost', port: 8443 });
    const f = t.write('web.json', JSON.stringify({ webListen: '192.168.1.20:8080' }));
    expect(loadSettings({ apiUrl: 'https://a.example', config: f }, {}).web).toMatchObject({ host: '192.168.1.20', port: 8080, source: `config ${f} key webListen` });
  });

  it.each([
    ['8080', 'must be HOST:PORT'],
    ['0.0.0.0', 'must be HOST:PORT'],
    [':8080', 'has no host'],
    ['0.0.0.0:0', 'port from 1 to 65535'],
    ['0.0.0.0:70000', 'port from 1 to 65535'],
    ['::1:8080', 'IPv6 address in brackets'],
    ['[nope]:8080', 'no IPv6 address'],
    ['bad host!:8080', 'neither an address nor a name'],
  ])('%j is refused with one line naming it and its source, exit 78', (value, why) => {
    const err = configFailure(() => load({ C2C_WEB_LISTEN: value }));
    expect(err.exitCode).toBe(EXIT.config);
    expect(err.message).toContain(`'${value}'`);
    expect(err.message).toContain('environment C2C_WEB_LISTEN');
    expect(err.message).toContain(why);
    expect(err.message).not.toContain('\n');
  });
});

describe('webCertFile and webKeyFile', () => {
  it('both: HTTPS, the paths resolved', () => {
    const web = load({ C2C_WEB_LISTEN: '0.0.0.0:8443', C2C_WEB_CERT_FILE: 'cert.pem', C2C_WEB_KEY_FILE: '/etc/k.pem' }).web;
    expect(web?.tls).toEqual({ certFile: path.resolve('cert.pem'), keyFile: '/etc/k.pem' });
  });

  it('one without the other, or either without webListen, is refused', () => {
    expect(configFailure(() => load({ C2C_WEB_LISTEN: '0.0.0.0:8443', C2C_WEB_CERT_FILE: '/c.pem' })).message).toContain('needs both webCertFile and webKeyFile');
    const err = configFailure(() => load({ C2C_WEB_CERT_FILE: '/c.pem', C2C_WEB_KEY_FILE: '/k.pem' }));
    expect(err.message).toContain('set webListen too');
    expect(err.exitCode).toBe(EXIT.config);
  });
});
