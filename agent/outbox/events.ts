// What the outbox publishes on the bus (merged into core's AgentEvents).
declare module '../core/event-bus.js' {
  interface AgentEvents {
    /** One attempt at an outbox item ended (done, dead or retry later). */
    outboxSettled: Record<string, never>;
    /** A kind that had to wait may go now (a worker's ready() turned true: the upload window opened): the dispatcher looks at once. */
    outboxWorkReady: Record<string, never>;
  }
}

export {};
