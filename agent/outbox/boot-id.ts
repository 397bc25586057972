// The kernel's boot id: a new random value at every boot, so `<boot id>:<n>`
// never repeats across reboots even on a unit with no real-time clock.
import { randomUUID } from 'node:crypto';
import { readBoundedText } from '../lib/bounded-read.js';

export const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

/** The boot id, or a random one when the kernel does not give it (not Linux, /proc not mounted): still unique, only not shared with other processes. */
export async function readBootId(file = BOOT_ID_FILE): Promise<string> {
  try {
    // procfs says size 0; the bounded read goes to the end all the same.
    const id = (await readBoundedText(file, { what: 'boot id', maxBytes: 4096 })).trim();
    if (/^[0-9a-f-]{16,64}$/i.test(id)) return id;
  } catch {
    // fall through to a random id
  }
  return randomUUID();
}
