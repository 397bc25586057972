import type { KeyObject } from 'node:crypto';

export interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

export interface Issuer {
  commonName: string;
  keys: KeyPair;
  /** The PEM of the issuer's own certificate (what a client trusts). */
  certPem: string;
}

export interface ServerCertificate {
  /** The server certificate then its issuer's, PEM. */
  certPem: string;
  keyPem: string;
}

export type CertificateKind = 'good' | 'not-yet-valid' | 'expired' | 'wrong-host' | 'unknown-ca' | 'custom';

export interface CertificateChoice {
  kind: CertificateKind;
  /** Epoch ms (not-yet-valid, custom). */
  notBefore?: number;
  /** Epoch ms (expired, custom). */
  notAfter?: number;
  /** Names and addresses (custom; default the loopback names). */
  hosts?: string[];
}

export const LOOPBACK_HOSTS: readonly string[];
export const CERTIFICATE_KINDS: readonly CertificateKind[];
export function makeCa(commonName: string, nowMs?: number): Issuer;
export function makeServerCertificate(issuer: Issuer, hosts: readonly string[], notBefore: number, notAfter: number): ServerCertificate;
export function validateCertificateChoice(value: unknown): CertificateChoice;
export function certificateFor(ca: Issuer, choice: CertificateChoice, nowMs?: number): ServerCertificate;
