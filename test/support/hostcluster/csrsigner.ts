/**
 * kube-controller-manager's kubernetes.io/kube-apiserver-client signer, as the stand-in runs it: an Approved CSR for
 * that signer gets status.certificate from the stand-in's own CA (the one its kubeconfig trusts) after a delay, or
 * a Failed condition when its usages do not fit a client certificate. CSRs for other signers are never signed.
 */
import { randomBytes } from 'node:crypto';
import forge from 'node-forge';
import { signCertificate } from '../../../src/pki/forgesign.js';
import { clientUsagesError, decodeBytes, parseCsr } from './csrvalidation.js';
import { clone, now, type KubeObj } from './objects.js';

/** The well-known signer of client certificates that kube-apiserver trusts; the only one the stand-in runs. */
export const KUBE_APISERVER_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';
// kube's signer backdates notBefore for clock skew, and notAfter too unless the certificate is short-lived.
const SIGNER_BACKDATE_MS = 5 * 60 * 1000;
const SIGNER_SHORT_MS = 8 * 60 * 60 * 1000;

const hasCondition = (csr: KubeObj, type: string) =>
  (csr.status?.conditions ?? []).some((c: any) => c?.type === type && c?.status === 'True');
/** IsCertificateRequestApproved: Approved and not Denied. */
const isApproved = (csr: KubeObj) => hasCondition(csr, 'Approved') && !hasCondition(csr, 'Denied');

/** 128-bit random serial, as kube's CA; positive DER INTEGER. */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x40;
  return bytes.toString('hex');
}

export interface SigningCa {
  cert: forge.pki.Certificate;
  keyPem: string;
}

/**
 * kube's CA Sign with PermissiveSigningPolicy: the request's subject, key and SANs; usages from spec.usages (for
 * this signer only client auth, digital signature and key encipherment get here); not a CA; validity backdated.
 */
function issueCertificate(
  csr: forge.pki.CertificateSigningRequest,
  usages: string[],
  ttlMs: number,
  ca: SigningCa,
): string {
  const cert = forge.pki.createCertificate();
  cert.publicKey = csr.publicKey as forge.pki.rsa.PublicKey;
  cert.serialNumber = randomSerial();
  const at = Date.now();
  cert.validity.notBefore = new Date(at - SIGNER_BACKDATE_MS);
  const notAfter = at + (ttlMs < SIGNER_SHORT_MS ? ttlMs : ttlMs - SIGNER_BACKDATE_MS);
  cert.validity.notAfter = new Date(Math.min(notAfter, ca.cert.validity.notAfter.getTime()));
  cert.setSubject(csr.subject.attributes);
  cert.setIssuer(ca.cert.subject.attributes);
  const keyUsage = {
    digitalSignature: usages.includes('digital signature'),
    keyEncipherment: usages.includes('key encipherment'),
  };
  const extensions: any[] = [{ name: 'basicConstraints', cA: false, critical: true }];
  // Go leaves keyUsage out when no bit is set.
  if (keyUsage.digitalSignature || keyUsage.keyEncipherment)
    extensions.push({ name: 'keyUsage', critical: true, ...keyUsage });
  if (usages.includes('client auth')) extensions.push({ name: 'extKeyUsage', clientAuth: true });
  extensions.push({ name: 'authorityKeyIdentifier', keyIdentifier: ca.cert.generateSubjectKeyIdentifier().getBytes() });
  const requested = (csr.getAttribute({ name: 'extensionRequest' }) as any)?.extensions ?? [];
  const san = requested.find((e: any) => e.name === 'subjectAltName');
  if (san) extensions.push({ name: 'subjectAltName', altNames: san.altNames });
  cert.setExtensions(extensions);
  signCertificate(forge, cert, ca.keyPem);
  // Go's PEM lines end in \n; forge writes \r\n.
  return forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n');
}

export interface CsrSignerOptions {
  ca: SigningCa;
  /** false: approved CSRs are never signed, as when the cluster's signer is not running. */
  enabled: boolean;
  /** How long the signer takes to issue an approved CSR's certificate. */
  delayMs: number;
  /** Approved CSRs wait for release() from the start (a request kept in flight as long as a test needs it). */
  held: boolean;
  /** The longest certificate it issues (kube-controller-manager's --cluster-signing-duration). */
  maxDurationMs: number;
  /** The stored CSR of that name (not a copy), and a write of a CSR through the API. */
  csrs: { find(name: string): KubeObj | undefined; write(obj: KubeObj): void };
  /** Whether the API is up: the controller writes through it, and retries while it is down. */
  isUp: () => boolean;
}

/** kube-controller-manager's csrsigning-kube-apiserver-client controller, reacting to approvals. */
export class CsrSigner {
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Whether approved CSRs wait for release() (from the start with `held`, again after hold()). */
  private holding: boolean;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly opts: CsrSignerOptions) {
    this.holding = opts.held;
  }

  /** Reacts to a CSR just approved (or otherwise updated). */
  schedule(csr: KubeObj): void {
    if (!this.opts.enabled || csr.spec?.signerName !== KUBE_APISERVER_CLIENT_SIGNER) return;
    const sign = () => this.sign(csr.metadata.name, csr.metadata.uid);
    if (this.holding) this.waiting.push(sign);
    else this.later(sign, this.opts.delayMs);
  }

  /** Approved CSRs wait for release() from now on. */
  hold(): void {
    this.holding = true;
  }

  /** Signs what was held, and from now on signs as approvals come (after delayMs), until hold(). */
  release(): void {
    this.holding = false;
    for (const sign of this.waiting.splice(0)) this.later(sign, this.opts.delayMs);
  }

  /** Drops the signings not yet done. */
  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.waiting.splice(0);
  }

  private later(fn: () => void, ms: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  private sign(name: string, uid: string): void {
    const csr = this.opts.csrs.find(name);
    if (!csr || csr.metadata.uid !== uid || !isApproved(csr) || hasCondition(csr, 'Failed') || csr.status?.certificate)
      return;
    // The controller writes through the API: while that is down it retries, as its work queue would.
    if (!this.opts.isUp()) return this.later(() => this.sign(name, uid), 100);
    const next = clone(csr);
    next.status = { ...(next.status ?? {}) };
    const usages: string[] = csr.spec.usages ?? [];
    const usageError = clientUsagesError(usages);
    if (usageError) {
      const at = now();
      next.status.conditions = [
        ...(next.status.conditions ?? []),
        {
          type: 'Failed',
          status: 'True',
          reason: 'SignerValidationFailure',
          message: usageError,
          lastUpdateTime: at,
          lastTransitionTime: at,
        },
      ];
    } else {
      const request = parseCsr(
        decodeBytes('CertificateSigningRequestSpec.spec.request', csr.spec.request),
      ) as forge.pki.CertificateSigningRequest;
      // The requested duration is honoured up to the cluster's maximum (validation keeps it >= 600 s).
      const requestedMs =
        typeof csr.spec.expirationSeconds === 'number' ? csr.spec.expirationSeconds * 1000 : this.opts.maxDurationMs;
      const pem = issueCertificate(request, usages, Math.min(requestedMs, this.opts.maxDurationMs), this.opts.ca);
      next.status.certificate = Buffer.from(pem).toString('base64');
    }
    this.opts.csrs.write(next);
  }
}
