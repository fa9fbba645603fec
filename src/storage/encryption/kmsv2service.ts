/**
 * The gRPC client of a KMS v2 plugin (kube's kmsv2 gRPCService): a unix socket, a timeout per call, calls that wait
 * for the plugin to be reachable until that timeout (kube's WaitForReady), and errors saying which call failed and
 * why, never with the bytes being encrypted (the caller adds the provider and endpoint).
 */
import grpc from '@grpc/grpc-js';
import { KeyManagementService } from './kmsv2proto.js';

export interface StatusResponse {
  version: string;
  healthz: string;
  keyID: string;
}

export interface EncryptResponse {
  ciphertext: Buffer;
  keyID: string;
  annotations: Record<string, Buffer>;
}

export interface DecryptRequest {
  ciphertext: Buffer;
  keyID: string;
  annotations: Record<string, Buffer>;
}

/**
 * The socket path of a `unix://` endpoint, as kube's ParseEndpoint reads it (a URL: `unix:///run/kms.sock` and
 * `unix:/run/kms.sock` are /run/kms.sock). Throws a message saying what is allowed otherwise.
 */
export function socketPath(endpoint: string): string {
  if (!endpoint) throw new Error("remote KMS provider can't use empty string as endpoint");
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(
      `invalid endpoint ${JSON.stringify(endpoint)} for remote KMS provider: expected unix:///path/to/socket`,
    );
  }
  if (url.protocol !== 'unix:') {
    throw new Error(
      `unsupported scheme ${JSON.stringify(url.protocol.slice(0, -1))} for remote KMS provider: only unix:///path/to/socket is supported`,
    );
  }
  const path = decodeURIComponent(url.pathname);
  if (url.host || !path.startsWith('/') || path === '/') {
    throw new Error(
      `invalid endpoint ${JSON.stringify(endpoint)} for remote KMS provider: expected unix:///path/to/socket (an absolute path)`,
    );
  }
  if (path.startsWith('/@')) {
    throw new Error(
      `invalid endpoint ${JSON.stringify(endpoint)} for remote KMS provider: abstract unix sockets are not supported, use a socket file`,
    );
  }
  return path;
}

type Callback<T> = (err: grpc.ServiceError | null, response: T) => void;
type Method<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: Callback<Res>,
) => void;

export class KMSv2Service {
  private readonly client: grpc.Client & Record<'Status' | 'Encrypt' | 'Decrypt', Method<object, unknown>>;

  /** Throws when the endpoint is not a unix socket; connecting happens on the first call. */
  constructor(
    endpoint: string,
    private readonly timeoutMs: number,
  ) {
    this.client = new KeyManagementService(`unix:${socketPath(endpoint)}`, grpc.credentials.createInsecure(), {
      // A local plugin that restarts is back within a second or two: do not wait minutes to reconnect.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
    }) as unknown as KMSv2Service['client'];
  }

  async status(): Promise<StatusResponse> {
    const res = await this.call<{ version: string; healthz: string; key_id: string }>('Status', {});
    return { version: res.version, healthz: res.healthz, keyID: res.key_id };
  }

  async encrypt(uid: string, plaintext: Buffer): Promise<EncryptResponse> {
    const res = await this.call<{ ciphertext: Buffer; key_id: string; annotations: Record<string, Buffer> }>(
      'Encrypt',
      { plaintext, uid },
    );
    return { ciphertext: res.ciphertext, keyID: res.key_id, annotations: res.annotations ?? {} };
  }

  async decrypt(uid: string, req: DecryptRequest): Promise<Buffer> {
    const res = await this.call<{ plaintext: Buffer }>('Decrypt', {
      ciphertext: req.ciphertext,
      uid,
      key_id: req.keyID,
      annotations: req.annotations,
    });
    return res.plaintext;
  }

  close(): void {
    this.client.close();
  }

  private call<T>(method: 'Status' | 'Encrypt' | 'Decrypt', request: object): Promise<T> {
    return new Promise((resolve, reject) => {
      const options = { deadline: Date.now() + this.timeoutMs };
      this.client[method](request, new grpc.Metadata({ waitForReady: true }), options, (err, response) => {
        if (err) reject(new Error(`${method} failed: ${this.reason(err)}`));
        else resolve(response as T);
      });
    });
  }

  /** What went wrong, for a person: the plugin's own message, or that it did not answer in time. */
  private reason(err: grpc.ServiceError): string {
    if (err.code === grpc.status.DEADLINE_EXCEEDED) {
      return `no answer within ${this.timeoutMs / 1000}s (is the plugin running and listening on the socket?)`;
    }
    return `${grpc.status[err.code] ?? err.code}: ${err.details}`;
  }
}
