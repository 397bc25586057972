// The uploads feature's outbox kinds: one home for their names.
/** A finished file uploaded whole (upload-item.ts). */
export const UPLOAD_KIND = 'upload';
/** A clip uploaded while it is recorded (realtime-item.ts). */
export const REALTIME_KIND = 'realtime-upload';
