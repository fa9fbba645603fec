/**
 * A KMS v2 plugin for tests: a real gRPC server on a unix socket in a temp dir, serving kube's v2 KeyManagementService
 * (loaded from the .proto file with @grpc/proto-loader, as a plugin written against it would be).
 * It encrypts with AES-256-GCM under a key per key ID it holds, and can be made unhealthy, slow, failing or stopped.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { repoRoot } from './tools.js';

export const pluginProtoPath = path.join(repoRoot, 'src/storage/encryption/kmsv2-plugin.proto');
export const encryptedObjectProtoPath = path.join(repoRoot, 'src/storage/encryption/kmsv2-encrypted-object.proto');

type Method = 'Status' | 'Encrypt' | 'Decrypt';

export interface TestKMSPlugin {
  /** `unix:///.../kms.sock`, the same across stop()/start(). */
  readonly endpoint: string;
  readonly socketPath: string;
  /** What Status and Encrypt report; changing it makes Encrypt use a new key (old ones still decrypt). */
  keyID: string;
  healthz: string;
  version: string;
  /** When set, the key ID Encrypt reports instead of keyID (a plugin contradicting its Status). */
  encryptKeyID?: string;
  /** Added to every answer. */
  delayMs: number;
  /** Methods that answer with an INTERNAL error. */
  failing: Set<Method>;
  /** Annotations Encrypt returns (and Decrypt insists on getting back). */
  annotations: Record<string, Buffer>;
  /** How many times each method was called, and the uid of each request. */
  readonly calls: Record<Method, number>;
  readonly uids: string[];
  /** What Encrypt would answer for `plaintext` now (to build stored objects by hand). */
  seal(plaintext: Buffer): Buffer;
  /** Stops serving (the socket goes away); start() serves again on the same socket with the same keys. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops and removes the temp dir. */
  close(): Promise<void>;
}

export async function startTestKMSPlugin(): Promise<TestKMSPlugin> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kms-plugin-'));
  const socketPath = path.join(dir, 'kms.sock');
  const definition = protoLoader.loadSync(pluginProtoPath, { keepCase: true, defaults: true });
  const service = (grpc.loadPackageDefinition(definition).v2 as grpc.GrpcObject)
    .KeyManagementService as grpc.ServiceClientConstructor;
  const keys = new Map<string, Buffer>();
  const keyFor = (keyID: string) => {
    if (!keys.has(keyID)) keys.set(keyID, randomBytes(32));
    return keys.get(keyID)!;
  };
  let server: grpc.Server | undefined;

  const plugin: TestKMSPlugin = {
    endpoint: `unix://${socketPath}`,
    socketPath,
    keyID: 'key-1',
    healthz: 'ok',
    version: 'v2',
    delayMs: 0,
    failing: new Set(),
    annotations: { 'version.kms.example.com': Buffer.from('1') },
    calls: { Status: 0, Encrypt: 0, Decrypt: 0 },
    uids: [],
    seal(plaintext) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', keyFor(plugin.keyID), nonce);
      return Buffer.concat([nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    },
    async stop() {
      if (!server) return;
      const s = server;
      server = undefined;
      s.forceShutdown();
      await fs.rm(socketPath, { force: true });
    },
    async start() {
      if (server) return;
      server = new grpc.Server();
      server.addService(service.service, {
        Status: handler('Status', () => ({ version: plugin.version, healthz: plugin.healthz, key_id: plugin.keyID })),
        Encrypt: handler('Encrypt', (req: { plaintext: Buffer }) => ({
          ciphertext: plugin.seal(req.plaintext),
          key_id: plugin.encryptKeyID ?? plugin.keyID,
          annotations: plugin.annotations,
        })),
        Decrypt: handler(
          'Decrypt',
          (req: { ciphertext: Buffer; key_id: string; annotations: Record<string, Buffer> }) => {
            const key = keys.get(req.key_id);
            if (!key) throw new Error(`unknown key ID ${req.key_id}`);
            if (JSON.stringify(req.annotations) !== JSON.stringify(plugin.annotations))
              throw new Error('annotations do not match');
            const c = req.ciphertext;
            const decipher = createDecipheriv('aes-256-gcm', key, c.subarray(0, 12));
            decipher.setAuthTag(c.subarray(c.length - 16));
            return { plaintext: Buffer.concat([decipher.update(c.subarray(12, c.length - 16)), decipher.final()]) };
          },
        ),
      });
      const s = server;
      await new Promise<void>((resolve, reject) =>
        s.bindAsync(`unix:${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
          err ? reject(err) : resolve(),
        ),
      );
    },
    async close() {
      await plugin.stop();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };

  function handler<Req extends object>(
    method: Method,
    answer: (req: Req) => object,
  ): grpc.handleUnaryCall<Req, object> {
    return (call, callback) => {
      plugin.calls[method]++;
      const { uid } = call.request as { uid?: string };
      if (uid !== undefined) plugin.uids.push(uid);
      setTimeout(() => {
        if (plugin.failing.has(method))
          return callback({ code: grpc.status.INTERNAL, details: `${method} is failing (test switch)` });
        try {
          callback(null, answer(call.request));
        } catch (err) {
          callback({ code: grpc.status.INVALID_ARGUMENT, details: (err as Error).message });
        }
      }, plugin.delayMs);
    };
  }

  await plugin.start();
  return plugin;
}
