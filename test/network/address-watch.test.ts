// The address watch (network/address-watch.ts): once a second it lists the
// unit's addresses; one away for ADDRESS_GONE_MS has its connections closed
// through every client's closer, once; one back sooner (a cable pulled and
// put back) closes nothing; an address only added closes nothing; loopback is
// never looked at; stop() leaves no timer.
import { describe, expect, it } from '@jest/globals';
import type os from 'node:os';
import { AddressWatch, addressesOf, type InterfaceTable } from '../../agent/network/address-watch.js';
import { ADDRESS_GONE_MS, ADDRESS_POLL_MS } from '../../agent/lib/timing.js';
import { FakeClock } from '../support/fake-clock.js';

const iface = (address: string, internal = false): os.NetworkInterfaceInfo =>
  ({ address, internal, family: address.includes(':') ? 'IPv6' : 'IPv4', netmask: '255.255.255.0', mac: '00:00:00:00:00:00', cidr: `${address}/24` }) as os.NetworkInterfaceInfo;

function rig(first: InterfaceTable) {
  const clock = new FakeClock();
  let table = first;
  const calls: string[][] = [];
  const logged: string[] = [];
  const logger = { info: (_o: unknown, msg: string) => logged.push(msg), debug: () => undefined } as never;
  const watch = new AddressWatch({
    clock,
    logger,
    interfaces: () => table,
    closers: [(gone) => (calls.push([...gone].sort()), 2), (gone) => (calls.push([...gone].sort()), 1)],
  });
  return { clock, watch, calls, logged, set: (t: InterfaceTable) => (table = t) };
}

describe('AddressWatch', () => {
  it('closes the connections of an address away for ADDRESS_GONE_MS, through every client, once, and says so', async () => {
    const r = rig({ lo: [iface('127.0.0.1', true)], eth0: [iface('10.0.0.2'), iface('fe80::1')] });
    r.watch.start();
    await r.clock.advance(ADDRESS_POLL_MS * 3);
    expect(r.calls).toEqual([]);
    r.set({ lo: [iface('127.0.0.1', true)], wlan0: [iface('192.168.1.7')], eth0: [iface('fe80::1')] });
    await r.clock.advance(ADDRESS_POLL_MS);
    expect(r.calls).toEqual([]);
    expect(r.logged).toEqual(['network changed: 192.168.1.7 added']);
    await r.clock.advance(ADDRESS_GONE_MS);
    expect(r.calls).toEqual([['10.0.0.2'], ['10.0.0.2']]);
    expect(r.logged[1]).toBe('network changed: 10.0.0.2 gone, 3 connection(s) on it closed');
    await r.clock.advance(ADDRESS_GONE_MS * 3);
    expect(r.calls).toHaveLength(2);
    await r.watch.stop();
  });

  it('an interface down and up again within the grace closes nothing and says nothing', async () => {
    const r = rig({ eth0: [iface('10.0.0.2')] });
    r.watch.start();
    r.set({});
    await r.clock.advance(ADDRESS_GONE_MS - ADDRESS_POLL_MS);
    r.set({ eth0: [iface('10.0.0.2')] });
    await r.clock.advance(ADDRESS_GONE_MS * 2);
    expect(r.calls).toEqual([]);
    expect(r.logged).toEqual([]);
    await r.watch.stop();
  });

  it('an interface down longer: closed once; back later: only noted', async () => {
    const r = rig({ eth0: [iface('10.0.0.2')] });
    r.watch.start();
    r.set({});
    await r.clock.advance(ADDRESS_GONE_MS + ADDRESS_POLL_MS);
    expect(r.calls).toEqual([['10.0.0.2'], ['10.0.0.2']]);
    r.set({ eth0: [iface('10.0.0.2')] });
    await r.clock.advance(ADDRESS_POLL_MS);
    expect(r.logged.at(-1)).toBe('network changed: 10.0.0.2 added');
    expect(r.calls).toHaveLength(2);
    await r.watch.stop();
  });

  it('stop() cancels its timer', async () => {
    const r = rig({ eth0: [iface('10.0.0.2')] });
    r.watch.start();
    expect(r.clock.pendingCount).toBe(1);
    await r.watch.stop();
    expect(r.clock.pendingCount).toBe(0);
    r.set({});
    await r.clock.advance(ADDRESS_POLL_MS * 5);
    expect(r.calls).toEqual([]);
  });

  it('loopback addresses are not the unit’s network', () => {
    expect([...addressesOf({ lo: [iface('127.0.0.1', true), iface('::1', true)], eth0: [iface('10.1.2.3')] })]).toEqual(['10.1.2.3']);
  });
});
