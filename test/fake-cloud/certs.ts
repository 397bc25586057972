// The fake's throwaway CA and certificates: made in-process by
// scripts/lib/certs.mjs (one home, shared with the fuzzers' hostile TLS
// server; it says why there is no openssl and no package).
export { CERTIFICATE_KINDS, LOOPBACK_HOSTS, certificateFor, makeCa, makeServerCertificate, validateCertificateChoice } from '../../scripts/lib/certs.mjs';
export type { CertificateChoice, CertificateKind, Issuer, KeyPair, ServerCertificate } from '../../scripts/lib/certs.mjs';
