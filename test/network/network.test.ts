// The network section: the default route's link and its kind from a fake
// host root, the service's round trip and last contact from the transport,
// and the route table read again only after LINK_REREAD_MS.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultRouteInterface, readDefaultLink } from '../../agent/network/link.js';
import { LINK_REREAD_MS, LINK_STALE_MS, NetworkUnit } from '../../agent/network/network-unit.js';
import { readStatusDocument as statusDocumentOf } from '../../agent/daemon/status-reader.js';
import { FakeClock } from '../support/fake-clock.js';

const HEAD = 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n';
const route = (iface: string, dest: string, metric: number, flags = '0003', mask = '00000000'): string => `${iface}\t${dest}\t0101A8C0\t${flags}\t0\t0\t${metric}\t${mask}\t0\t0\t0\n`;

describe('network link', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'netlink-'));
    mkdirSync(path.join(root, 'proc', 'net'), { recursive: true });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function iface(name: string, files: Record<string, string>, dirs: string[] = []): void {
    const d = path.join(root, 'sys', 'class', 'net', name);
    mkdirSync(d, { recursive: true });
    for (const [f, text] of Object.entries(files)) writeFileSync(path.join(d, f), text);
    for (const sub of dirs) mkdirSync(path.join(d, sub));
  }
  const routes = (text: string): void => writeFileSync(path.join(root, 'proc', 'net', 'route'), HEAD + text);

  it('picks the default route with the lowest metric, ignoring other routes and routes that are down', () => {
    expect(defaultRouteInterface(HEAD + route('eth0', '0001A8C0', 0, '0001', '00FFFFFF') + route('wlan0', '00000000', 600) + route('eth0', '00000000', 100) + route('wwan0', '00000000', 1, '0002'))).toBe('eth0');
    expect(defaultRouteInterface(HEAD)).toBeUndefined();
  });

  it('tells ethernet, wifi (wireless dir or DEVTYPE=wlan), cellular (DEVTYPE=wwan, PPP, raw IP) and other', () => {
    iface('eth0', { type: '1\n', uevent: 'INTERFACE=eth0\n' });
    iface('wlan0', { type: '1\n', uevent: 'INTERFACE=wlan0\n' }, ['wireless']);
    iface('mlan0', { type: '1\n', uevent: 'DEVTYPE=wlan\nINTERFACE=mlan0\n' });
    iface('wwan0', { type: '1\n', uevent: 'DEVTYPE=wwan\n' });
    iface('ppp0', { type: '512\n' });
    iface('rmnet_data0', { type: '519\n' });
    iface('tun0', { type: '65534\n' });
    for (const [name, type] of [['eth0', 'ethernet'], ['wlan0', 'wifi'], ['mlan0', 'wifi'], ['wwan0', 'cellular'], ['ppp0', 'cellular'], ['rmnet_data0', 'cellular'], ['tun0', 'other']] as const) {
      routes(route(name, '00000000', 0));
      expect(readDefaultLink(root)).toEqual({ interface: name, type });
    }
  });

  it('no route table, or no default route: nulls', () => {
    expect(readDefaultLink(path.join(root, 'nothing'))).toEqual({ interface: null, type: null });
    routes(route('eth0', '0001A8C0', 0, '0001', '00FFFFFF'));
    expect(readDefaultLink(root)).toEqual({ interface: null, type: null });
  });

  it('the unit reports rtt and last contact from the transport, the upload rate, and reads the route table again only after a while', async () => {
    const clock = new FakeClock();
    let reads = 0;
    const unit = new NetworkUnit({
      hostRoot: root,
      clock,
      lastMeta: () => ({ status: 200, rateLimit: {}, rttMs: 42, receivedAt: Date.UTC(2026, 0, 1, 12) }),
      uploadBytesPerSecond: () => 1234,
      read: (r) => {
        reads++;
        return readDefaultLink(r);
      },
    });
    iface('eth0', { type: '1\n' });
    routes(route('eth0', '00000000', 0));
    const section = unit.report().network;
    expect(section).toEqual({ interface: 'eth0', type: 'ethernet', serviceRttMs: 42, uploadBytesPerSecond: 1234, lastContactAt: '2026-01-01T12:00:00.000Z' });
    // status.json (every heartbeat) reads it again only after LINK_STALE_MS; the API's look after LINK_REREAD_MS.
    await clock.advance(LINK_REREAD_MS - 1);
    unit.refresh();
    unit.report();
    expect(reads).toBe(1);
    await clock.advance(1);
    unit.report();
    expect(reads).toBe(1);
    unit.refresh();
    expect(reads).toBe(2);
    await clock.advance(LINK_STALE_MS - 1);
    unit.report();
    expect(reads).toBe(2);
    await clock.advance(1);
    unit.report();
    expect(reads).toBe(3);
    // A state transition makes the next look read it.
    unit.onSnapshot({} as never, false);
    unit.report();
    expect(reads).toBe(3);
    unit.onSnapshot({} as never, true);
    unit.report();
    expect(reads).toBe(4);
    // The status document's reader keeps the section as written.
    const doc = statusDocumentOf({ ...JSON.parse(JSON.stringify({ state: 'online', reason: 'x', since: { at: 'a', monotonic: 1 }, pid: 1, started: { at: 'a', monotonic: 1 }, consecutiveFailures: 0, firmwareVersion: '1.0.0', agentVersion: '0', timeScale: 1, updated: { at: 'a', monotonic: 1 } })), network: section });
    expect(doc?.network).toEqual(section);
  });
});
