// startFakeCloud: the in-process fake of the service's device API.
// See README.md in this folder for the interface other tests rely on.
import { randomUUID } from 'node:crypto';
import { CloudState, makeClock, secret } from './state.js';
import type { TokenState, VirtualTime } from './state.js';
import { RateLimiter, DEFAULT_RATE_LIMIT } from './rate-limit.js';
import type { RateLimitOptions } from './rate-limit.js';
import { Referee } from './referee.js';
import type { RefereeReport } from './referee.js';
import { FaultSet } from './faults.js';
import type { Fault } from './faults.js';
import { Pipeline } from './pipeline.js';
import type { JournalEntry } from './pipeline.js';
import { Router } from './router.js';
import { coreRoutes } from './core.js';
import { Pairing, pairingRoutes } from './pairing.js';
import { approvalPageRoutes } from './approval-page.js';
import { channelRoutes } from './channels.js';
import { Uploads, STORAGE_PREFIX } from './uploads.js';
import type { AssetView } from './uploads.js';
import { Logging } from './logging.js';
import type { CommentRecord, LoggingReport, PressRecord } from './logging.js';
import { startAdmin } from './admin.js';
import { injectInto, socketError } from './inject.js';
import { Front } from './front.js';
import type { ConnectionFault } from './front.js';
import { validateCertificateChoice } from './certs.js';
import type { CertificateChoice, Issuer } from './certs.js';
import type { InjectRequest, InjectResponse } from './inject.js';

export type { Fault, FaultKind } from './faults.js';
export type { JournalEntry } from './pipeline.js';
export type { RefereeReport } from './referee.js';
export type { AssetView } from './uploads.js';
export type { CommentRecord, LoggingReport, PressRecord } from './logging.js';
export type { TokenState, VirtualTime } from './state.js';
export type { InjectRequest, InjectResponse } from './inject.js';
export type { CertificateChoice, CertificateKind } from './certs.js';
export type { ConnectionFault, ConnectionFaultKind } from './front.js';

export interface FakeCloudOptions {
  /** Seeded, paired devices (default 1). */
  devices?: number;
  /** API port, 0 = ephemeral (default). */
  port?: number;
  /** Admin port, 0 = ephemeral (default). */
  adminPort?: number;
  /** Same meaning as the agent's --time-scale (default 1). */
  timeScale?: number;
  /**
   * The fake's time instead of performance.now() * timeScale (state.ts,
   * makeClock): a function is agent-time ms since start moved by hand (the
   * fake's own tests); a VirtualTime (the test's virtual clock: the fleet, the
   * daemon in-process) is the time and the timers of delay faults, with no
   * slack for jitter at the referee.
   */
  clock?: (() => number) | VirtualTime;
  /** Source of randomness for fault fractions (default Math.random). */
  random?: () => number;
  tokenLifetimeSeconds?: number;
  refreshLifetimeSeconds?: number;
  /** Approve pairing codes automatically after this many agent seconds. */
  autoApproveSeconds?: number;
  rateLimit?: RateLimitOptions;
  /** The device model's client secret (default: random, see FakeCloud.clientSecret). */
  clientSecret?: string;
  /** Upper bound of one presigned upload part (default 5 MiB). */
  uploadPartBytes?: number;
  /** The journal keeps at most this many entries (default 100000). */
  journalLimit?: number;
  /** false: no HTTP servers at all, requests come only through inject() (default true). */
  listen?: boolean;
  /** Wall time (epoch ms) at agent time 0, for ISO times and inject()'s Date header (default: now). */
  wallStart?: number;
  /**
   * Serve HTTPS with a throwaway CA made at start (its PEM in `caFile`);
   * default false here (the standalone fake defaults to HTTPS). The admin
   * endpoint stays plain HTTP on loopback.
   */
  tls?: boolean;
  /** The certificate served at start (TLS only; default `{kind: 'good'}`). */
  certificate?: CertificateChoice;
  /** Where the CA file is written (default a fresh temp dir, removed at close). */
  caDir?: string;
  /** Sign with this CA (certs.ts makeCa) instead of a fresh one: many fakes, one CA file a test run trusts. */
  ca?: Issuer;
}

export interface SeededDevice {
  id: string;
  name: string;
  clientId: string;
  clientSecret: string;
  accessToken: string;
  refreshToken: string;
  projectId: string;
  projectName: string;
}

export interface FaultHandle {
  id: number;
  remove(): void;
}

export interface FakeCloudControl {
  refuseConnections(): void;
  acceptConnections(): Promise<void>;
  addFault(fault: Fault): FaultHandle;
  removeFault(id: number): boolean;
  clearFaults(): void;
  listFaults(): Array<Fault & { id: number; hits: number }>;
  revokeTokens(deviceId: string): void;
  pause(deviceId: string): void;
  unpause(deviceId: string): void;
  /** The person gives the authorization an expiry, `inMs` agent ms from now (null: none); past it the device's tokens get 401. */
  setAuthorizationExpiry(deviceId: string, inMs: number | null): void;
  /** The person approving a pairing user code, as typed (`015 869` is `015869`); false when no pending code matches. */
  approve(userCode: string): boolean;
  /**
   * The test's word that the device could not reach the fake during
   * [fromMs, toMs] (its power or its own network was off): the referee counts
   * no tooLate across it, as for a fault.
   */
  deviceAway(deviceId: string, fromMs: number, toMs: number): void;
  /** TLS only: new handshakes get this certificate; idle kept-alive connections are dropped. */
  serveCertificate(choice: CertificateChoice): void;
  /**
   * The service's clock runs `ms` ahead of the real one (negative: behind) in
   * the HTTP Date header of every answer: with a certificate valid from a
   * future date, the unit looks as far behind as a Pi booted before NTP.
   */
  setDateOffset(ms: number): void;
  /** A fault on new connections before any HTTP (cut or slow TLS handshakes). */
  addConnectionFault(fault: ConnectionFault): FaultHandle;
  removeConnectionFault(id: number): boolean;
  clearConnectionFaults(): void;
  listConnectionFaults(): Array<ConnectionFault & { id: number; hits: number }>;
}

export interface FakeCloud {
  url: string;
  adminUrl: string;
  /** The throwaway CA's certificate file (PEM) when serving TLS, else ''. */
  caFile: string;
  /** The same CA as PEM text, '' over plain HTTP. */
  caPem: string;
  clientSecret: string;
  devices: SeededDevice[];
  journal: JournalEntry[];
  /** Fake agent-time ms since start, the clock of the journal and the referee. */
  now(): number;
  referee(deviceId: string): RefereeReport;
  device(deviceId: string): Record<string, unknown> | undefined;
  /** Device id paired for a client_id, if any. */
  deviceIdForClient(clientId: string): string | undefined;
  asset(assetId: string): AssetView | undefined;
  /** Test-only: every asset created so far (all devices), in creation order. */
  assets(): AssetView[];
  /** Test-only: every trigger call (real-time logging) received, of a device or all, in arrival order, with the referee's findings. */
  presses(deviceId?: string): PressRecord[];
  /** Test-only: every comment made on an asset, of an asset or all. */
  comments(assetId?: string): CommentRecord[];
  /** The referee of a device's presses: received, accepted, duplicates, what was wrong. */
  logging(deviceId: string): LoggingReport;
  /** Test-only: what the fake would make of an access or refresh token now (never logged, never recorded). */
  tokenState(token: string): TokenState;
  control: FakeCloudControl;
  /**
   * One request through the same pipeline as the HTTP server, without a
   * socket: resolves with the answer (a delay fault holds it on the fake's
   * clock), rejects with code ECONNREFUSED while connections are refused and
   * ECONNRESET where the server would drop the connection.
   */
  inject(req: InjectRequest): Promise<InjectResponse>;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';

export async function startFakeCloud(options: FakeCloudOptions = {}): Promise<FakeCloud> {
  const timeScale = options.timeScale ?? 1;
  if (!(timeScale > 0)) throw new Error('timeScale must be > 0');
  const clock = makeClock(timeScale, options.clock, options.wallStart);
  const clientSecret = options.clientSecret ?? secret('fcs');
  const state = new CloudState(clock, {
    tokenLifetimeSeconds: options.tokenLifetimeSeconds ?? 28800,
    refreshLifetimeSeconds: options.refreshLifetimeSeconds ?? 14 * 24 * 3600,
    clientSecret,
  });
  const referee = new Referee(clock.toleranceMs, clock.now);
  const faults = new FaultSet(options.random);
  const journal: JournalEntry[] = [];
  const router = new Router();
  const pairing = new Pairing(state, clock, options.autoApproveSeconds);
  pairing.onRevoke = (deviceId) => referee.disturbed(deviceId, clock.now());
  const uploads = new Uploads(state, clock, options.uploadPartBytes ?? 5 * 1024 * 1024);
  coreRoutes(router, state);
  pairingRoutes(router, pairing);
  approvalPageRoutes(router, pairing);
  channelRoutes(router, state);
  uploads.routes(router);
  const logging = new Logging(state, clock, (id) => uploads.view(id)?.deviceId);
  logging.routes(router);

  const pipeline = new Pipeline({
    clock,
    state,
    router,
    limiter: new RateLimiter(options.rateLimit ?? DEFAULT_RATE_LIMIT),
    faults,
    referee,
    journal,
    journalLimit: options.journalLimit ?? 100_000,
    storagePrefix: STORAGE_PREFIX,
    storage: (req, res, entry, hits) => uploads.storage(req, res, entry, hits, pipeline),
    storageOwner: (path) => uploads.ownerOf(path),
  });

  const seeded: SeededDevice[] = [];
  for (let i = 0; i < (options.devices ?? 1); i++) {
    const clientId = randomUUID();
    const d = state.createDevice(clientId, ['asset_create', 'offline', 'device_connect'], `Fake Camera ${i + 1}`);
    const tokens = state.issueTokens(d.id, true);
    seeded.push({
      id: d.id,
      name: d.name,
      clientId,
      clientSecret,
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token!,
      projectId: d.projectId,
      projectName: d.projectName,
    });
  }

  const serve = options.listen !== false;
  let dateOffsetMs = 0;
  let badCertificateSince: number | undefined = options.certificate !== undefined && options.certificate.kind !== 'good' && options.certificate.kind !== 'custom' ? 0 : undefined;
  const front = new Front({
    host: HOST,
    tls: serve && options.tls === true,
    ...(options.certificate !== undefined && { certificate: validateCertificateChoice(options.certificate) }),
    ...(options.caDir !== undefined && { caDir: options.caDir }),
    ...(options.ca !== undefined && { ca: options.ca }),
    timeScale,
    random: options.random ?? Math.random,
    onFault: (f) => referee.disturbed(undefined, clock.now(), clock.now() + (f.delayMs ?? 0)),
    handler: (req, res) => {
      // The service's clock as the test set it: only the HTTP Date header moves.
      if (dateOffsetMs !== 0) res.setHeader('date', new Date(Date.now() + dateOffsetMs).toUTCString());
      pipeline.handle(req, res);
    },
  });
  const port = serve ? await front.start(options.port ?? 0) : 0;
  let listening = true;
  let closing = false;

  const stopListening = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    // Keep-alive sockets would otherwise keep serving a "refused" client.
    if (serve) await front.stop();
  };

  const deviceOrThrow = (id: string) => {
    const d = state.devices.get(id);
    if (!d) throw new Error(`unknown device ${id}`);
    return d;
  };

  const control: FakeCloudControl = {
    refuseConnections() {
      referee.refused();
      void stopListening();
    },
    async acceptConnections() {
      if (listening || closing) return;
      if (serve) await front.listen(port);
      listening = true;
      referee.accepted();
    },
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    listFaults: () => faults.list(),
    revokeTokens(deviceId) {
      deviceOrThrow(deviceId);
      state.revokeDevice(deviceId);
      referee.disturbed(deviceId, clock.now());
    },
    pause(deviceId) {
      deviceOrThrow(deviceId).paused = true;
    },
    unpause(deviceId) {
      deviceOrThrow(deviceId).paused = false;
    },
    setAuthorizationExpiry(deviceId, inMs) {
      const d = deviceOrThrow(deviceId);
      if (inMs === null) delete d.authorizationExpiresAt;
      else d.authorizationExpiresAt = clock.now() + inMs;
    },
    approve: (userCode) => pairing.approve(userCode),
    deviceAway(deviceId, fromMs, toMs) {
      deviceOrThrow(deviceId);
      referee.disturbed(deviceId, fromMs, toMs);
    },
    serveCertificate(choice) {
      front.serveCertificate(validateCertificateChoice(choice));
      // A certificate no client accepts serves nobody: the referee counts no lateness across it.
      if (choice.kind !== 'good' && choice.kind !== 'custom') badCertificateSince ??= clock.now();
      else if (badCertificateSince !== undefined) {
        referee.disturbed(undefined, badCertificateSince, clock.now());
        badCertificateSince = undefined;
      }
    },
    setDateOffset(ms) {
      if (!Number.isFinite(ms)) throw new Error('the Date offset must be a number of ms');
      dateOffsetMs = ms;
    },
    addConnectionFault: (fault) => front.addConnectionFault(fault),
    removeConnectionFault: (id) => front.removeConnectionFault(id),
    clearConnectionFaults: () => front.clearConnectionFaults(),
    listConnectionFaults: () => front.listConnectionFaults(),
  };

  const cloud: FakeCloud = {
    url: serve ? `${front.scheme}://${HOST}:${port}` : '',
    adminUrl: '',
    caFile: front.caFile,
    caPem: front.ca?.certPem ?? '',
    clientSecret,
    devices: seeded,
    journal,
    now: clock.now,
    referee: (id) => referee.report(id),
    device: (id) => state.deviceJson(id),
    deviceIdForClient: (clientId) => state.byClientId.get(clientId),
    asset: (id) => uploads.view(id),
    assets: () => uploads.all(),
    presses: (id) => logging.presses.filter((p) => id === undefined || p.deviceId === id),
    comments: (id) => logging.comments.filter((c) => id === undefined || c.assetId === id),
    logging: (id) => logging.report(id),
    tokenState: (token) => state.tokenState(token),
    control,
    inject: (req) =>
      listening && !closing
        ? injectInto(pipeline.handle, req, () => new Date(clock.iso(clock.now())).toUTCString())
        : Promise.reject(socketError('ECONNREFUSED', 'connect ECONNREFUSED (the fake refuses connections)')),
    close: async () => {
      if (closing) return;
      closing = true;
      pipeline.close();
      await Promise.all([stopListening(), admin.close()]);
      await front.close();
    },
  };
  const admin = serve ? await startAdmin(cloud, HOST, options.adminPort ?? 0) : { url: '', close: async () => {} };
  cloud.adminUrl = admin.url;
  return cloud;
}
