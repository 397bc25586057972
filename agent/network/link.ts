// Which link carries the default route, and what kind of link it is, read
// from the kernel's files under the host root (so the simulator and tests
// fake them with a folder): proc/net/route for the route, and
// sys/class/net/<if>/ for the kind: a `wireless` (or `phy80211`) entry or
// DEVTYPE=wlan in `uevent` is wifi, DEVTYPE=wwan or a PPP/raw-IP link type
// is cellular, ARP type 1 otherwise is ethernet, anything else other.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { readBoundedTextSync } from '../lib/bounded-read.js';
import type { NetworkType } from './section.js';

export interface DefaultLink {
  interface: string | null;
  type: NetworkType | null;
}

/** ARPHRD_* values (linux/if_arp.h) that say the kind by themselves. */
const ARPHRD_ETHER = 1;
const ARPHRD_PPP = 512;
const ARPHRD_RAWIP = 519;
const ARPHRD_NONE = 0xfffe;

const RTF_UP = 0x1;
const MAX_ROUTE_BYTES = 256 * 1024;

function readText(file: string): string | undefined {
  try {
    return readBoundedTextSync(file, { what: 'network state', maxBytes: MAX_ROUTE_BYTES });
  } catch {
    return undefined;
  }
}

/** The interface of the default route (destination and mask 0, up) with the lowest metric; undefined when none. */
export function defaultRouteInterface(routeTable: string): string | undefined {
  let best: { iface: string; metric: number } | undefined;
  for (const line of routeTable.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const [iface, dest, , flagsHex, , , metricText, mask] = f as [string, string, string, string, string, string, string, string];
    const flags = Number.parseInt(flagsHex, 16);
    const metric = Number.parseInt(metricText, 10);
    if (dest !== '00000000' || mask !== '00000000' || !(flags & RTF_UP) || !Number.isFinite(metric)) continue;
    if (best === undefined || metric < best.metric) best = { iface, metric };
  }
  return best?.iface;
}

/** The kind of interface `iface`, from sys/class/net/<iface>/ under `hostRoot`. */
export function linkType(hostRoot: string, iface: string): NetworkType {
  // The name comes from a file: it must be one folder name, not a path.
  if (iface.includes('/') || iface === '.' || iface === '..') return 'other';
  const dir = path.join(hostRoot, 'sys', 'class', 'net', iface);
  const uevent = readText(path.join(dir, 'uevent')) ?? '';
  const devtype = /^DEVTYPE=(.*)$/m.exec(uevent)?.[1]?.trim();
  if (devtype === 'wlan' || existsSync(path.join(dir, 'wireless')) || existsSync(path.join(dir, 'phy80211'))) return 'wifi';
  if (devtype === 'wwan') return 'cellular';
  const arp = Number.parseInt(readText(path.join(dir, 'type'))?.trim() ?? '', 10);
  if (arp === ARPHRD_PPP || arp === ARPHRD_RAWIP || (arp === ARPHRD_NONE && /^(wwan|rmnet|usb)/.test(iface))) return 'cellular';
  if (arp === ARPHRD_ETHER) return /^(wwan|rmnet)/.test(iface) ? 'cellular' : 'ethernet';
  return 'other';
}

/** The default route's link under `hostRoot`; nulls when there is none (or the route table cannot be read). */
export function readDefaultLink(hostRoot: string): DefaultLink {
  const table = readText(path.join(hostRoot, 'proc', 'net', 'route'));
  const iface = table === undefined ? undefined : defaultRouteInterface(table);
  return iface === undefined ? { interface: null, type: null } : { interface: iface, type: linkType(hostRoot, iface) };
}
