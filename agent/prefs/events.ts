// The preferences' event and line (merged into core's AgentEvents and EventLines).

/** What the camera's own UI may set on the daemon (GET/PATCH /v1/prefs), kept on flash by prefs-store.ts. */
export interface Prefs {
  /** Off: the media watcher's finds are held back (not queued) until it is on again; files queued by hand still go. */
  autoUpload: boolean;
}

declare module '../core/event-bus.js' {
  interface AgentEvents {
    /** The preferences changed (PATCH /v1/prefs): in effect at once. */
    prefsChanged: { prefs: Prefs };
  }
}

declare module '../core/event-lines.js' {
  interface EventLines {
    /** The preferences after a change, whoever made it. */
    prefs: Prefs;
  }
}
