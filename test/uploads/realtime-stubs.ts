// A real-time worker's dependencies as stand-ins, for the suites that drive
// RealtimeWorker directly: no outbox, no index, storage and the service's
// calls replaced by what each test gives. One home, so a new dependency of
// the worker is one line here.
import type { RealtimeWorkerDeps } from '../../agent/uploads/realtime-worker.js';
import { FakeClock } from '../support/fake-clock.js';

export function realtimeDeps(o: Pick<RealtimeWorkerDeps, 'assets' | 'storage'> & Partial<RealtimeWorkerDeps>): RealtimeWorkerDeps {
  return {
    outbox: { progress: async () => undefined, flush: async () => undefined },
    clock: new FakeClock(),
    serverNow: () => Date.UTC(2026, 0, 1),
    channelId: async () => undefined,
    index: { has: () => false, add: async () => undefined, addRecording: async () => undefined },
    deleteAfterUpload: false,
    settleMs: 1_000,
    ...o,
  } as RealtimeWorkerDeps;
}
