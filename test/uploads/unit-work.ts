// Points in an UploadsUnit's work a test waits for, instead of a fixed real
// wait: what the unit did NOT queue is judged after one of these.
import type { UploadsUnit } from '../../agent/uploads/uploads-unit.js';
import type { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

/**
 * Once everything the unit was given before this call has been handled: bus
 * events (mediaFileReady, mediaFileGrowing), looks at incoming/ and settle
 * looks all run on its one work chain, and queueByHand runs in line with them
 * (an empty list queues nothing).
 */
export async function handled(unit: UploadsUnit): Promise<void> {
  await unit.queueByHand([], false);
}

/**
 * Once the unit has started, on a clock with no timer of its own before:
 * incoming/ made (a write of its own beside the work chain, which must not
 * outlast the test), its poll armed on `clock` (the first look is chained at
 * once after) and that first look done.
 */
export async function started(unit: UploadsUnit, clock: FakeClock): Promise<void> {
  await until('the requests folder watched', () => clock.pendingCount > 0);
  await handled(unit);
}
