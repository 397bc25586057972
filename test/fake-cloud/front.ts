// The fake's listening front: one TCP server on loopback that hands each
// connection to the HTTP or HTTPS server (which never listen themselves), so
// a test can misbehave below HTTP: cut a TLS handshake, hold it for a while,
// or swap the served certificate mid-run.
import { createServer as createHttpServer, type RequestListener, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { certificateFor, makeCa, type CertificateChoice, type Issuer, type ServerCertificate } from './certs.js';

export type ConnectionFaultKind = 'cut-handshake' | 'slow-handshake';
export const CONNECTION_FAULT_KINDS: readonly ConnectionFaultKind[] = ['cut-handshake', 'slow-handshake'];

/** A fault on new connections, before any HTTP: counted per connection. */
export interface ConnectionFault {
  kind: ConnectionFaultKind;
  /** Share of new connections hit, 0..1 (default 1). */
  fraction?: number;
  /** Stop after this many hits. */
  count?: number;
  /** For 'slow-handshake': how long the connection is held before the handshake is served, agent ms. */
  delayMs?: number;
}

export function validateConnectionFault(value: unknown): ConnectionFault {
  if (value === null || typeof value !== 'object') throw new Error('connection fault must be an object');
  const f = value as Record<string, unknown>;
  if (!CONNECTION_FAULT_KINDS.includes(f.kind as ConnectionFaultKind)) throw new Error(`unknown connection fault kind: ${String(f.kind)}`);
  for (const k of ['fraction', 'count', 'delayMs']) if (f[k] !== undefined && typeof f[k] !== 'number') throw new Error(`connection fault.${k} must be a number`);
  if (typeof f.fraction === 'number' && (f.fraction < 0 || f.fraction > 1)) throw new Error('connection fault.fraction must be in 0..1');
  if (f.kind === 'slow-handshake' && (typeof f.delayMs !== 'number' || f.delayMs < 0)) throw new Error('a slow-handshake fault needs delayMs >= 0');
  return f as unknown as ConnectionFault;
}

export interface FrontOptions {
  host: string;
  tls: boolean;
  /** The certificate served at start (default good). */
  certificate?: CertificateChoice;
  /** Where the CA file is written (default a fresh directory under the system's temp dir, removed at close). */
  caDir?: string;
  /** A CA to sign with instead of a fresh one (many fakes, one CA a test run trusts). */
  ca?: Issuer;
  timeScale: number;
  random: () => number;
  handler: RequestListener;
  /** Told of every connection a fault hit (the referee counts no lateness across it). */
  onFault?: (fault: ConnectionFault) => void;
}

export class Front {
  readonly server: HttpServer | HttpsServer;
  /** The CA's PEM and file, when serving TLS. */
  readonly ca: Issuer | undefined;
  caFile = '';
  private readonly tcp: NetServer;
  private readonly sockets = new Set<Socket>();
  private readonly held = new Set<NodeJS.Timeout>();
  private faults: Array<{ id: number; fault: ConnectionFault; hits: number }> = [];
  private nextFaultId = 1;
  private ownCaDir: string | undefined;
  private listening = false;
  port = 0;

  constructor(private readonly options: FrontOptions) {
    this.ca = options.tls ? (options.ca ?? makeCa('c2c-agent fake cloud CA (throwaway)')) : undefined;
    this.server = this.ca
      ? createHttpsServer({ ...this.secureOptions(certificateFor(this.ca, options.certificate ?? { kind: 'good' })), keepAliveTimeout: 5000 }, options.handler)
      : createHttpServer({ keepAliveTimeout: 5000 }, options.handler);
    this.tcp = createNetServer((socket) => this.accept(socket));
  }

  private secureOptions(cert: ServerCertificate): { cert: string; key: string } {
    return { cert: cert.certPem, key: cert.keyPem };
  }

  get scheme(): 'http' | 'https' {
    return this.ca ? 'https' : 'http';
  }

  /** Writes the CA file (TLS only) and starts listening. */
  async start(port: number): Promise<number> {
    if (this.ca) {
      let dir = this.options.caDir;
      if (dir === undefined) dir = this.ownCaDir = mkdtempSync(join(tmpdir(), 'fake-cloud-ca-'));
      this.caFile = join(dir, 'fake-cloud-ca.pem');
      writeFileSync(this.caFile, this.ca.certPem, { mode: 0o644 });
    }
    return this.listen(port);
  }

  listen(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.tcp.once('error', reject);
      this.tcp.listen(port, this.options.host, () => {
        this.tcp.off('error', reject);
        this.listening = true;
        this.port = (this.tcp.address() as AddressInfo).port;
        resolve(this.port);
      });
    });
  }

  /** Stops listening and drops every open connection (held ones too). */
  stop(): Promise<void> {
    return new Promise((resolve) => {
      for (const t of this.held) clearTimeout(t);
      this.held.clear();
      for (const s of this.sockets) s.destroy();
      this.server.closeAllConnections();
      if (!this.listening) return resolve();
      this.listening = false;
      this.tcp.close(() => resolve());
    });
  }

  /** Stops and removes the CA directory the front made. */
  async close(): Promise<void> {
    await this.stop();
    if (this.ownCaDir !== undefined) rmSync(this.ownCaDir, { recursive: true, force: true });
  }

  /** New handshakes get this certificate; kept-alive idle connections are dropped so the next request meets it. */
  serveCertificate(choice: CertificateChoice): void {
    if (!this.ca) throw new Error('the fake serves plain HTTP: no certificate to swap');
    (this.server as HttpsServer).setSecureContext(this.secureOptions(certificateFor(this.ca, choice)));
    this.server.closeIdleConnections();
  }

  addConnectionFault(fault: ConnectionFault): { id: number; remove(): void } {
    const entry = { id: this.nextFaultId++, fault: validateConnectionFault(fault), hits: 0 };
    this.faults.push(entry);
    return { id: entry.id, remove: () => this.removeConnectionFault(entry.id) };
  }

  removeConnectionFault(id: number): boolean {
    const before = this.faults.length;
    this.faults = this.faults.filter((f) => f.id !== id);
    return this.faults.length !== before;
  }

  clearConnectionFaults(): void {
    this.faults = [];
  }

  listConnectionFaults(): Array<ConnectionFault & { id: number; hits: number }> {
    return this.faults.map((f) => ({ ...f.fault, id: f.id, hits: f.hits }));
  }

  private matchFault(): ConnectionFault | undefined {
    for (const f of this.faults) {
      if (f.fault.count !== undefined && f.hits >= f.fault.count) continue;
      const fraction = f.fault.fraction ?? 1;
      if (fraction < 1 && !(this.options.random() < fraction)) continue;
      f.hits++;
      return f.fault;
    }
    return undefined;
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const fault = this.matchFault();
    if (fault !== undefined) this.options.onFault?.(fault);
    if (fault?.kind === 'cut-handshake') {
      // The client's first bytes (its ClientHello) arrive, then the line goes dead.
      socket.once('data', () => socket.destroy());
      return;
    }
    if (fault?.kind === 'slow-handshake') {
      const t = setTimeout(() => {
        this.held.delete(t);
        if (!socket.destroyed) this.server.emit('connection', socket);
      }, (fault.delayMs ?? 0) / this.options.timeScale);
      this.held.add(t);
      return;
    }
    this.server.emit('connection', socket);
  }
}
