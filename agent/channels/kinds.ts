// The channels feature's outbox kind: one home for its name (feature.ts,
// channels-unit.ts, sync-worker.ts).
export const CHANNEL_SYNC_KIND = 'channel-sync';
