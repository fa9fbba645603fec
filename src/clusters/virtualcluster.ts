/**
 * A virtual cluster's own API, reached with the connection vcluster keeps in its namespace of the cluster it runs
 * in (the Secret `vc-<virtual cluster>`, key `config`: a kubeconfig with the virtual cluster's CA and an admin
 * credential), and the one thing this server asks of it: a client certificate through a CertificateSigningRequest
 * that the server approves itself. Errors are HostClusterErrors whose messages carry no credentials.
 *
 * The Secret is tenant-writable, so the server it names may be the tenant's own: its answers are read up to
 * MAX_ANSWER_BYTES, the addresses connected to are those the allow-list lets through (serverallowlist.ts), and
 * nothing of an answer is sent back but the fields a step needs.
 */
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type Forge from 'node-forge';
import { Backoff } from '../apimachinery/backoff.js';
import { isPlainObject } from '../apimachinery/types.js';
import { sleep } from '../apimachinery/sleep.js';
import { awayFromThread } from '../apimachinery/away.js';
import { signCertificationRequest } from '../pki/forgesign.js';
import { lazyRequire } from '../lazyrequire.js';
import { connectionSecretName } from '../kinds/virtualclusterinstance/placement.js';
import { HostCluster, HostClusterError } from '../host/cluster.js';
import type { HostConnection } from '../host/kubeconfigfile.js';
import type { ServerAllowList } from '../host/serverallowlist.js';
import { StoredKubeConfigError, kubeConfigFromData } from '../host/storedkubeconfig.js';

export const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';
const CONNECTION_KEY = 'config';
const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
/**
 * The most bytes read of one answer of a virtual cluster. A CertificateSigningRequest is a few KiB (a PEM request,
 * a PEM certificate, conditions); parsing JSON can take 20-30 times its size in memory, so the bound is kept low.
 */
export const MAX_ANSWER_BYTES = 1024 * 1024;
/** The longest text of an answer quoted in a message (a condition's reason or message). */
const MAX_QUOTED = 256;
const generateRsaKeyPair = promisify(generateKeyPair);
// Loaded by the first certificate request, not by every server.
const loadForge = lazyRequire<typeof Forge>('node-forge');

/**
 * The certificates.k8s.io/v1 CertificateSigningRequest this server writes: created, then approved. What it reads back
 * is untyped data (the server may be anyone's).
 */
interface CertificateSigningRequest {
  apiVersion: string;
  kind: string;
  metadata: { name?: string; generateName?: string; uid?: string; resourceVersion?: string };
  spec: { request: string; signerName: string; usages: string[]; expirationSeconds?: number };
  status?: { conditions: Array<{ type: string; status: string; reason: string; message: string }> };
}

/**
 * Why there is no connection to a virtual cluster: not (yet) there, or there but unusable. The message is for
 * operators (it names the Secret and what is wrong, never its data); callers are told less (actions/virtualclusterkubeconfig.ts).
 */
export class VirtualClusterConnectionError extends Error {
  constructor(
    message: string,
    /** The Secret is not there (the virtual cluster is not running, most likely), or it is but cannot be used. */
    readonly problem: 'missing' | 'unusable' = 'unusable',
  ) {
    super(message);
    this.name = 'VirtualClusterConnectionError';
  }
}

export interface VirtualCluster {
  api: HostCluster;
  /** The virtual cluster's CA (PEM, base64 as in a kubeconfig). */
  caData: string;
  /** The resourceVersion of the connection Secret it was made from ("" when the answer had none). */
  secretVersion: string;
}

/**
 * Reads `vc-<name>` in `namespace` of `cluster` (the connected cluster the virtual cluster runs in, described for
 * messages by `clusterName`) and connects to the virtual cluster it describes. The Secret is tenant-writable data:
 * its kubeconfig may hold only certificates, a token and the CA (storedkubeconfig.ts). `kept`, a connection made
 * before, is the answer while the Secret is still at its resourceVersion: its kept-alive connections serve again
 * and nothing is parsed.
 */
export async function connectVirtualCluster(
  cluster: HostCluster,
  namespace: string,
  name: string,
  allowedServers: ServerAllowList,
  clusterName = 'the host cluster',
  kept?: VirtualCluster,
): Promise<VirtualCluster> {
  const secretName = connectionSecretName(name);
  const where = `Secret ${namespace}/${secretName} in ${clusterName}`;
  let data: Record<string, string> | undefined;
  let secretVersion: string;
  try {
    const secret = await cluster.request<{ metadata?: { resourceVersion?: unknown }; data?: Record<string, string> }>(
      `reading ${where}`,
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(secretName)}`,
    );
    data = secret?.data;
    const version = secret?.metadata?.resourceVersion;
    secretVersion = typeof version === 'string' ? version : '';
  } catch (err) {
    if (err instanceof HostClusterError && err.code === 404)
      throw new VirtualClusterConnectionError(
        `the virtual cluster's connection (${where}) does not exist; is the virtual cluster running?`,
        'missing',
      );
    throw err;
  }
  if (kept && secretVersion && kept.secretVersion === secretVersion) return kept;
  if (!data?.[CONNECTION_KEY])
    throw new VirtualClusterConnectionError(`${where} has no key ${JSON.stringify(CONNECTION_KEY)}`);
  let connection: HostConnection;
  try {
    connection = kubeConfigFromData(Buffer.from(data[CONNECTION_KEY], 'base64').toString('utf8'));
  } catch (err) {
    if (err instanceof StoredKubeConfigError)
      throw new VirtualClusterConnectionError(`${where}, key ${JSON.stringify(CONNECTION_KEY)}: ${err.message}`);
    throw err;
  }
  return {
    api: new HostCluster(connection, { maxResponseBytes: MAX_ANSWER_BYTES, allowedServers }),
    caData: connection.caData!,
    secretVersion,
  };
}

/**
 * Whether the virtual cluster `name` runs in `namespace` of `cluster`: whether its connection Secret `vc-<name>` is
 * there. Asked with the connection's credential, within its bounds (time, answer size); nothing of the Secret is
 * kept. A HostClusterError when the cluster does not say (a 404 is its "no").
 */
export async function virtualClusterExists(cluster: HostCluster, namespace: string, name: string): Promise<boolean> {
  const secretName = connectionSecretName(name);
  try {
    await cluster.request<unknown>(
      `reading Secret ${namespace}/${secretName}`,
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(secretName)}`,
    );
    return true;
  } catch (err) {
    if (err instanceof HostClusterError && err.code === 404) return false;
    throw err;
  }
}

export interface ClientCertificateRequest {
  /** The certificate's common name: the user the virtual cluster will see. */
  user: string;
  /** Its organizations: the user's groups there. */
  groups: string[];
  /** 0 or undefined: no lifetime asked for (the cluster's signing duration applies). */
  expirationSeconds?: number;
  /** How long to wait for the signer (bounded: the caller is waiting on an HTTP request). */
  timeoutMs: number;
}

export interface ClientCertificate {
  certificatePem: string;
  keyPem: string;
}

/** The certificate was not issued: refused, failed, or not in time. */
export class CertificateNotIssuedError extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
  ) {
    super(message);
    this.name = 'CertificateNotIssuedError';
  }
}

/**
 * A new key pair and a client certificate for it: a CSR for kube-apiserver-client, approved by this server (with
 * the connection's admin credential), then polled until the signer issues the certificate. The private key exists
 * only in the returned value.
 */
export async function issueClientCertificate(
  vc: HostCluster,
  req: ClientCertificateRequest,
): Promise<ClientCertificate> {
  // Off the event loop (libuv's thread pool): a 2,048-bit key takes tens to hundreds of milliseconds to find.
  const { privateKey, publicKey } = await generateRsaKeyPair('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forge = loadForge();
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  csr.setSubject([
    { name: 'commonName', value: req.user },
    ...req.groups.map((g) => ({ name: 'organizationName', value: g })),
  ]);
  signCertificationRequest(forge, csr, privateKey);

  const body: CertificateSigningRequest = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { generateName: 'platform-kubeconfig-' },
    spec: {
      request: Buffer.from(forge.pki.certificationRequestToPem(csr)).toString('base64'),
      signerName: CLIENT_SIGNER,
      usages: ['digital signature', 'key encipherment', 'client auth'],
      ...(req.expirationSeconds ? { expirationSeconds: req.expirationSeconds } : {}),
    },
  };
  const creating = 'creating a CertificateSigningRequest in the virtual cluster';
  const created = identity(creating, await vc.request<unknown>(creating, 'POST', CSRS, { body }));
  const name = created.name;
  // kube takes only status.conditions from an approval (the stored spec and status stay); the name, and the uid and
  // resourceVersion as preconditions, say which request. Nothing else of the answer is sent back.
  const approval: CertificateSigningRequest = {
    ...body,
    metadata: created,
    status: {
      conditions: [
        {
          type: 'Approved',
          status: 'True',
          reason: 'PlatformKubeConfig',
          message: `kube config for ${req.user}, approved by the management API`,
        },
      ],
    },
  };
  await vc.request(
    `approving CertificateSigningRequest ${name}`,
    'PUT',
    `${CSRS}/${encodeURIComponent(name)}/approval`,
    { body: approval },
  );

  const deadline = Date.now() + req.timeoutMs;
  // Polls of the signer: soon at first, as it usually signs at once.
  const polls = new Backoff({ initialMs: 50, maxMs: 500 });
  for (;;) {
    const delay = polls.next();
    const current = await vc.request<unknown>(
      `reading CertificateSigningRequest ${name}`,
      'GET',
      `${CSRS}/${encodeURIComponent(name)}`,
    );
    // Read as untyped data: the answer is whatever the server sent.
    const status = isPlainObject(current) && isPlainObject(current.status) ? current.status : {};
    if (typeof status.certificate === 'string' && status.certificate)
      return { certificatePem: Buffer.from(status.certificate, 'base64').toString('utf8'), keyPem };
    const conditions = Array.isArray(status.conditions) ? status.conditions.filter(isPlainObject) : [];
    const refused = conditions.find((c) => (c.type === 'Failed' || c.type === 'Denied') && c.status === 'True');
    if (refused)
      throw new CertificateNotIssuedError(
        `the virtual cluster's signer did not issue the certificate (CertificateSigningRequest ${name}: ${quoted(refused.type)}, ${quoted(refused.reason)}: ${quoted(refused.message)})`,
        false,
      );
    if (Date.now() + delay > deadline)
      throw new CertificateNotIssuedError(
        `the virtual cluster did not issue the certificate within ${req.timeoutMs / 1000}s (CertificateSigningRequest ${name} is approved; is its signer running?)`,
        true,
      );
    // Waiting on the signer, as its requests do (apimachinery/away.ts).
    await awayFromThread(() => sleep(delay));
  }
}

/**
 * The name, uid and resourceVersion of a created CertificateSigningRequest. A name that could not be one (kube's
 * names are at most 253 characters and a path segment) is an answer this server cannot use.
 */
function identity(what: string, answer: unknown): { name: string; uid?: string; resourceVersion?: string } {
  const metadata = isPlainObject(answer) && isPlainObject(answer.metadata) ? answer.metadata : {};
  const { name, uid, resourceVersion } = metadata;
  if (typeof name !== 'string' || !name || name.length > 253 || name === '.' || name === '..' || /[/%]/.test(name))
    throw new HostClusterError(`${what}: the answer has no usable metadata.name`);
  return {
    name,
    ...(typeof uid === 'string' && uid ? { uid } : {}),
    ...(typeof resourceVersion === 'string' && resourceVersion ? { resourceVersion } : {}),
  };
}

/** A text of an answer as a message quotes it: at most MAX_QUOTED characters. */
function quoted(text: unknown): string {
  const s = typeof text === 'string' ? text : '';
  return s.length > MAX_QUOTED ? `${s.slice(0, MAX_QUOTED)}...` : s;
}
