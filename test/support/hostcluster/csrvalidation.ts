/**
 * kube's validation of CertificateSigningRequests (pkg/apis/certificates/validation), as far as the stand-in models
 * it: the request's PEM and signature, usages, signerName, expirationSeconds and status conditions; and the
 * kube-apiserver-client signer's own check of usages (which fails the CSR instead of refusing it).
 */
import forge from 'node-forge';
import { fieldError, GoLiteral, Path, type FieldError } from '../../../src/apimachinery/field.js';
import * as errors from '../../../src/apimachinery/status.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../../src/apimachinery/validation.js';
import { bytesError, type KubeObj } from './objects.js';

// allValidUsages, in the sorted order Go's sets.List prints them.
const VALID_USAGES = [
  'signing',
  'digital signature',
  'content commitment',
  'key encipherment',
  'key agreement',
  'data encipherment',
  'cert sign',
  'crl sign',
  'encipher only',
  'decipher only',
  'any',
  'server auth',
  'client auth',
  'code signing',
  'email protection',
  's/mime',
  'ipsec end system',
  'ipsec tunnel',
  'ipsec user',
  'timestamping',
  'ocsp signing',
  'microsoft sgc',
  'netscape sgc',
].sort();
// Approved, Denied and Failed may only be True.
export const TRUE_ONLY_CONDITIONS = ['Approved', 'Denied', 'Failed'];
const CONDITION_STATUSES = ['False', 'True', 'Unknown'];

/** A []byte field as encoding/json reads it: padded standard base64, newlines skipped. Bad input is a decode error (400). */
export function decodeBytes(field: string, value: unknown): Buffer {
  const why = bytesError(field, value);
  if (why)
    throw errors.badRequest(
      `CertificateSigningRequest in version "v1" cannot be handled as a CertificateSigningRequest: ${why}`,
    );
  return typeof value === 'string' ? Buffer.from(value.replace(/[\r\n]/g, ''), 'base64') : Buffer.alloc(0);
}

/** kube's ParseCSR then CheckSignature; a string is the error, as kube words it where it can. */
export function parseCsr(pem: Buffer): forge.pki.CertificateSigningRequest | string {
  const text = pem.toString('latin1');
  const block = /-----BEGIN ([^-\r\n]+)-----/.exec(text);
  if (!block || block[1] !== 'CERTIFICATE REQUEST') return 'PEM block type must be CERTIFICATE REQUEST';
  try {
    const csr = forge.pki.certificationRequestFromPem(text.slice(block.index), true);
    return csr.verify() ? csr : 'crypto/rsa: verification error';
  } catch (err) {
    const message = (err as Error).message;
    // Say so rather than pass for kube: a cluster would accept ECDSA and Ed25519 keys.
    return message.includes('OID is not RSA')
      ? `the stand-in reads RSA requests only (node-forge): ${message}`
      : `x509: ${message}`;
  }
}

/** ValidateSignerName (pkg/apis/core/validation). */
function validateSignerName(at: Path, signerName: string): FieldError[] {
  if (!signerName) return [fieldError.required(at)];
  const segments = signerName.split('/');
  if (segments.length !== 2)
    return [
      fieldError.invalid(
        at,
        signerName,
        "must be a fully qualified domain and path of the form 'example.com/signer-name'",
      ),
    ];
  const [domain, path] = segments;
  const errs: FieldError[] = [];
  if (domain.length > 253) errs.push(fieldError.tooLong(at, 253));
  for (const label of domain.split('.')) {
    const found = isDNS1123Label(label);
    if (!found.length) continue;
    errs.push(...found.map((e) => fieldError.invalid(at, domain, `validating label ${JSON.stringify(label)}: ${e}`)));
    break;
  }
  if (domain.split('.').length < 2)
    errs.push(fieldError.invalid(at, domain, 'should be a domain with at least two segments separated by dots'));
  for (const label of path.split('.')) {
    const found = isDNS1123Subdomain(label);
    if (!found.length) continue;
    errs.push(...found.map((e) => fieldError.invalid(at, path, `validating label ${JSON.stringify(label)}: ${e}`)));
    break;
  }
  return errs;
}

/** validateConditions: types set and unique, Approved/Denied/Failed only True, never both Approved and Denied. */
export function validateConditions(conditions: any[]): FieldError[] {
  const errs: FieldError[] = [];
  const at = Path.root('status').child('conditions');
  const seen = new Set<string>();
  let approved = false;
  let denied = false;
  conditions.forEach((c, i) => {
    const type = c?.type ?? '';
    if (!type) errs.push(fieldError.required(at.index(i).child('type')));
    const allowed = TRUE_ONLY_CONDITIONS.includes(type) ? ['True'] : CONDITION_STATUSES;
    if (!c?.status) errs.push(fieldError.required(at.index(i).child('status')));
    else if (!allowed.includes(c.status))
      errs.push(fieldError.notSupported(at.index(i).child('status'), c.status, allowed));
    if ((type === 'Approved' && denied) || (type === 'Denied' && approved)) {
      errs.push(
        fieldError.invalid(at.index(i).child('type'), type, 'Approved and Denied conditions are mutually exclusive'),
      );
    }
    approved ||= type === 'Approved';
    denied ||= type === 'Denied';
    if (seen.has(type)) errs.push(fieldError.duplicate(at.index(i).child('type'), type));
    seen.add(type);
  });
  return errs;
}

/** validateCertificateSigningRequest for a create (the status is empty by then). */
export function validateCsr(obj: KubeObj): FieldError[] {
  const errs: FieldError[] = [];
  const spec = Path.root('spec');
  if (!obj.metadata.name)
    errs.push(fieldError.required(Path.root('metadata').child('name'), 'name or generateName is required'));
  const parsed = parseCsr(decodeBytes('CertificateSigningRequestSpec.spec.request', obj.spec.request));
  // kube prints every byte of the request here ([]byte{0x2d, ...}); the stand-in abbreviates.
  if (typeof parsed === 'string')
    errs.push(fieldError.invalid(spec.child('request'), new GoLiteral('[]byte{...}'), parsed));
  const usages: unknown[] = Array.isArray(obj.spec.usages) ? obj.spec.usages : [];
  if (!usages.length) errs.push(fieldError.required(spec.child('usages')));
  usages.forEach((u, i) => {
    if (!VALID_USAGES.includes(u as string))
      errs.push(fieldError.notSupported(spec.child('usages').index(i), u, VALID_USAGES));
  });
  usages.forEach((u, i) => {
    if (usages.indexOf(u) < i) errs.push(fieldError.duplicate(spec.child('usages').index(i), u));
  });
  const signerName = typeof obj.spec.signerName === 'string' ? obj.spec.signerName : '';
  if (signerName === 'kubernetes.io/legacy-unknown') {
    errs.push(
      fieldError.invalid(
        spec.child('signerName'),
        signerName,
        'the legacy signerName is not allowed via this API version',
      ),
    );
  } else {
    errs.push(...validateSignerName(spec.child('signerName'), signerName));
  }
  const seconds = obj.spec.expirationSeconds;
  if (seconds !== undefined && seconds !== null && seconds < 600) {
    errs.push(
      fieldError.invalid(
        spec.child('expirationSeconds'),
        seconds,
        'may not specify a duration less than 600 seconds (10 minutes)',
      ),
    );
  }
  return errs;
}

/** The signer's own check of kube-apiserver-client requests (validAPIServerClientUsages); kube fails the CSR on it. */
export function clientUsagesError(usages: string[]): string | undefined {
  const bad = usages.find((u) => !['client auth', 'digital signature', 'key encipherment'].includes(u));
  if (bad !== undefined) return `invalid usage for client certificate: ${bad}`;
  if (!usages.includes('client auth')) return 'missing required usage for client certificate: client auth';
  return undefined;
}
