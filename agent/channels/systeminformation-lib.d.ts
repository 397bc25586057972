// systeminformation ships types only for its index; hardware.ts imports three
// of its modules by path (see there why) and types what it uses itself.
declare module 'systeminformation/lib/system.js';
declare module 'systeminformation/lib/usb.js';
declare module 'systeminformation/lib/audio.js';
