// The local API's handler map lives in core/routes.ts (every feature's
// context carries it); this name stays for the local API's own files.
export * from '../core/routes.js';
