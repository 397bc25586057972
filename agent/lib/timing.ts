// The times every part of the agent shares: the service's published limits
// and the margins the agent derives from them. One home, so the profile
// loader, the API client and the daemon's loops can never disagree.
//
// The service's rules: a request that cannot finish in 30 s fails; a device
// heartbeats at most once a minute and at least once every five minutes.

/** The service fails any request it cannot finish in 30 s: never wait longer for an answer. */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Phases of any connection, to the service or to storage: a name lookup, a TCP or TLS handshake. */
export const LOOKUP_TIMEOUT_MS = 5_000;
export const CONNECT_TIMEOUT_MS = 10_000;
/** Sending a request to the service (small bodies: a form, a JSON document). */
export const SEND_TIMEOUT_MS = 10_000;
/** Our hard stop on a request, in case the client's own timeout does not fire. */
export const ATTEMPT_GUARD_MS = REQUEST_TIMEOUT_MS + 5_000;

/** Two heartbeats at the service are at least this far apart. */
export const MIN_SPACING_MS = 60_000;
/** Timer lateness and clock-rate skew between us and the service. */
export const SPACING_MARGIN_MS = 2_000;
/** While the service answers, two accepted heartbeats are at most this far apart at the service. */
export const MAX_SUCCESS_GAP_MS = 300_000;
/** Room for send latency and timer lateness (at --time-scale 60 a real ms is 60 agent ms). */
export const LATE_MARGIN_MS = 10_000;
/**
 * Latest start of the next attempt after a success started: the service sees
 * a request anywhere up to the end of our wait for it, so even an answer that
 * takes the whole guard must land inside MAX_SUCCESS_GAP_MS.
 */
export const MAX_AFTER_SUCCESS_MS = MAX_SUCCESS_GAP_MS - ATTEMPT_GUARD_MS - LATE_MARGIN_MS;

/**
 * The heartbeat window a firmware profile may ask for, in whole seconds: a
 * profile outside it is refused at load time, never silently changed.
 */
export const HEARTBEAT_WINDOW_SECONDS = { min: MIN_SPACING_MS / 1000, max: MAX_AFTER_SUCCESS_MS / 1000 } as const;

/** A Retry-After longer than this is treated as this: a bad header must not silence a camera for days. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * Real ms a cancel (DELETE /v1/uploads/{id}) waits for the attempt it aborted
 * to stop before it answers: "stops within seconds", and an answer that never
 * hangs on a stuck socket.
 */
export const CANCEL_WAIT_MS = 5_000;

/**
 * The local API (agent/localapi/): what one client may cost the daemon. Real
 * time, not agent time: these guard sockets, which the time scale does not
 * speed up. Exported here so the tests and docs/local-api.md quote one place.
 */
export const LOCAL_API = {
  /** Connections open at once; past it the oldest idle one is dropped, or the newcomer if none is idle. */
  maxConnections: 64,
  /**
   * Events streams open at once, well below maxConnections: readers never go idle, so without a cap of their
   * own they could take every connection and leave none for GET /v1/status or a write. Past it, 503.
   */
  maxStreams: 16,
  /**
   * Requests read on one connection and waiting for their answer behind the one being answered. node parses
   * every request of a read at once (up to 64 KiB), so a bound is needed on what is kept; past it the request
   * is refused (503) in its turn and the connection closed after it, nothing after it answered.
   */
  maxPipelined: 32,
  /** Arrays and objects nested in a request body: API bodies are two deep; a deeper value only costs stack to describe. */
  maxBodyDepth: 32,
  /** A request body larger than this is refused with 413 (a batch of a few hundred paths fits). */
  maxBodyBytes: 256 * 1024,
  /** Request line and headers. */
  maxHeaderBytes: 8 * 1024,
  /** A connection that sends no complete request head within this is dropped. */
  headersTimeoutMs: 5_000,
  /** A whole request (head and body) must arrive within this. */
  requestTimeoutMs: 10_000,
  /** A kept-alive connection with no request is closed after this. */
  idleTimeoutMs: 10_000,
  /** Bytes an events reader may leave unread before it gets its last line and is disconnected. */
  eventsBufferBytes: 256 * 1024,
  /** A disconnected events reader whose last line is not taken within this is destroyed. */
  eventsGoodbyeMs: 2_000,
  /**
   * An events reader sent nothing for this long gets a `keepalive` line: on a quiet daemon, a reader that takes
   * nothing would otherwise never fill its socket, and so never be found out.
   */
  eventsKeepAliveMs: 10_000,
  /** An events reader with lines waiting whose socket took nothing for this long is dropped (it reads nothing). */
  eventsStallMs: 30_000,
  /** Upload progress lines on the events stream, per upload: at most one per this many real ms. */
  uploadProgressEveryMs: 1_000,
} as const;

/** How long a pairing waits for a person to approve the code (`pair --timeout`, POST /v1/pair's `timeoutSeconds`): long enough to find the app and type a code a few times over. */
export const PAIRING_TIMEOUT_MS = 600_000;
/** The longest a pairing may be asked to wait (`pair --timeout`, `timeoutSeconds`): a day; a code the service gave expires long before. */
export const PAIRING_TIMEOUT_MAX_MS = 86_400_000;

/**
 * Real-time uploads (uploads/realtime-worker.ts): how often a recording's
 * size is looked at (an fstat; a part goes once it is on disk, so this is
 * at most the delay added to each part and to the finish), and how long a
 * recording may go without a byte written before it is finished with what is
 * on disk. A camera writes every frame, many times a second: half an hour
 * without a write is a recorder that died, not a pause, and the file is then
 * finished well within the asset's 24 h lifetime instead of left to expire.
 */
export const REALTIME_LOOK_MS = 250;
export const REALTIME_STALL_MS = 30 * 60_000;

/**
 * TCP keepalive on every connection to the service and to storage while a
 * request waits on it, real ms of the kernel's (the time scale does not reach
 * it): after this long without a byte from the other end, the kernel probes
 * once a second, ten times (libuv's fixed interval and count), so a path that
 * has gone dead (an address that changed, a NAT mapping lost) fails the
 * socket in about 11 s instead of the request's whole limit. A server that is
 * only slow to answer still ACKs the probes. The same delay node's Agent gives
 * its idle pooled sockets (keepAliveMsecs), so a reused socket and a fresh one
 * behave alike; the probes are a few dozen bytes, sent only while an answer is
 * awaited.
 */
export const TCP_KEEPALIVE_IDLE_MS = 1_000;

/**
 * How often the daemon looks at its own addresses, real ms (the network does
 * not follow --time-scale). A connection bound to an address the unit no
 * longer has (its interface went down, DHCP or a roam gave it another one)
 * can never carry another byte, yet nothing tells its socket: it is closed
 * (after ADDRESS_GONE_MS), so what ran on it fails and is retried from the
 * new address at once rather than at its timeout.
 */
export const ADDRESS_POLL_MS = 1_000;
/**
 * How long an address must stay away before its connections are closed, real
 * ms: a cable pulled and put back or a Wi-Fi roam within this keeps them (TCP
 * carries on where it stopped, the request in flight is not lost), a changed
 * address or a move to another network is noticed this long after it.
 */
export const ADDRESS_GONE_MS = 5_000;

/**
 * A certificate "not yet valid" or "expired" with this unit's clock further
 * than this from the service's, in the direction that explains it, is this
 * unit's clock (a Pi without a real-time clock before NTP), not the
 * certificate. Certificates are issued hours to days ahead of use; a clock a
 * minute off is already one NTP has not set.
 */
export const CLOCK_WRONG_MS = 60_000;
/** The clock check (GET /health unverified, its Date only) is asked at most this often; its answer is reused meanwhile. */
export const CLOCK_CHECK_REUSE_MS = 60_000;
/** Its time limit: one connection and a header, less than a request's so it never doubles a wait. */
export const CLOCK_CHECK_TIMEOUT_MS = 10_000;

/**
 * The camera's web page (agent/web/, docs/web-page.md). The PIN's rule: a
 * handful of wrong PINs in a row, then a pause the page states, each further
 * pause of the streak twice the last (agent ms, on the Clock); the streak is
 * forgotten after a quiet hour or a right PIN. A session unused for half a
 * day ends. The server's own limits (real ms and counts) keep one phone, or
 * a scanner on the LAN, from costing the daemon more than its share.
 */
export const WEB_PAGE = {
  pinTries: 5,
  pinPauseMs: 30_000,
  pinPauseMaxMs: 15 * 60_000,
  pinStreakForgetMs: 60 * 60_000,
  sessionIdleMs: 12 * 3_600_000,
  maxSessions: 32,
  maxConnections: 32,
  /** Live-update streams open at once (one per open page); past it the oldest is ended (its page reconnects). */
  maxStreams: 8,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  maxHeaderBytes: 8 * 1024,
  maxBodyBytes: 16 * 1024,
  /** A live-update stream sent nothing for this long (real ms) gets a comment line, so a dead reader is found. */
  eventsKeepAliveMs: 20_000,
  /** Bytes a live-update reader may leave unread before its stream is ended (its page reconnects and reads the status first). */
  eventsBufferBytes: 256 * 1024,
} as const;
