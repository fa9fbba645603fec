/**
 * Shared fixtures for the integration and e2e tests: API constants, unique names, API path builders (for both path
 * forms), plain object bodies (and the known secret the encryption tests look for), the beforeAll/afterAll that
 * start and stop a test server (with an etcd of its own or of the file's), and EtcdPeek for reading stored objects
 * straight from etcd.
 * Argument order is always (namespace, name).
 */
import { beforeAll, afterAll, expect } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { startTestServer, type TestServer } from './server.js';
import { startTestEtcd, type TestEtcd } from './etcd.js';
import { GROUP_PATH, type HttpClient } from './http.js';

export const GROUP = 'management.platform.sh';
export const API_VERSION = `${GROUP}/v1`;
export const JSON_PATCH = 'application/json-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';
/** Server-side apply's patch type. */
export const APPLY_PATCH = 'application/apply-patch+yaml';
/** Prefix of the direct path form (/orchestrator/management/apis/...); the aggregated form has none. */
export const DIRECT_PREFIX = '/orchestrator/management';

let counter = 0;
/** A fresh DNS-label name for each object, so tests never see each other's data. */
export function uniq(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 7)}`;
}

/** API paths; `prefix` picks the path form ('' for aggregated, DIRECT_PREFIX for direct). */
export function sharedSecretsPath(ns: string, prefix = ''): string {
  return `${prefix}${GROUP_PATH}/namespaces/${ns}/sharedsecrets`;
}

export function sharedSecretPath(ns: string, name: string, prefix = ''): string {
  return `${sharedSecretsPath(ns, prefix)}/${name}`;
}

export function virtualClusterInstancesPath(ns: string): string {
  return `${GROUP_PATH}/namespaces/${ns}/virtualclusterinstances`;
}

export const CLUSTERS_PATH = `${GROUP_PATH}/clusters`;
export const PROJECTS_PATH = `${GROUP_PATH}/projects`;

export function clusterPath(name: string, prefix = ''): string {
  return `${prefix}${CLUSTERS_PATH}/${name}`;
}

/** A valid SharedSecret to create as `name` (with the labels, if given). */
export function secretBody(name: string, labels?: Record<string, string>): Record<string, any> {
  return {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: labels ? { name, labels } : { name },
    spec: { displayName: `Secret ${name}`, data: { token: 'c2VjcmV0' } },
  };
}

/** A valid Cluster to create as `name` (with the labels, if given). */
export function clusterBody(name: string, labels?: Record<string, string>): Record<string, any> {
  return {
    apiVersion: API_VERSION,
    kind: 'Cluster',
    metadata: labels ? { name, labels } : { name },
    spec: {
      displayName: `Cluster ${name}`,
      config: { secretName: 'kubeconfig', secretNamespace: 'platform' },
      managementNamespace: 'platform-system',
    },
  };
}

/** What the encryption tests store as secret data: a recognisable text, to look for in etcd (and its base64). */
export const KNOWN_SECRET = 'correct-horse-battery-staple';
export const KNOWN_SECRET_B64 = Buffer.from(KNOWN_SECRET).toString('base64');

/** secretBody(name) with KNOWN_SECRET_B64 as its only data. */
export function secretWithKnownData(name: string): Record<string, any> {
  const body = secretBody(name);
  body.spec.data = { token: KNOWN_SECRET_B64 };
  return body;
}

/** Creates secretBody(name, labels) in `ns` as `client`, expects 201 and returns the created object. */
export async function createSecretAs(
  client: HttpClient,
  ns: string,
  name: string,
  labels?: Record<string, string>,
): Promise<any> {
  const res = await client.post(sharedSecretsPath(ns), secretBody(name, labels));
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body;
}

/** Reads what the server stored, directly from the test server's etcd (under its prefix). */
export class EtcdPeek {
  private readonly client: Etcd3;
  private readonly prefix: string;

  constructor(ts: TestServer) {
    this.client = new Etcd3({ hosts: ts.etcd.endpoint });
    this.prefix = `${ts.config.etcdPrefix}/${GROUP}`;
  }

  sharedSecretKey(ns: string, name: string): string {
    return `${this.prefix}/sharedsecrets/${ns}/${name}`;
  }

  clusterKey(name: string): string {
    return `${this.prefix}/clusters/${name}`;
  }

  /** The raw etcd entry: the stored JSON and the key's mod revision. */
  async entry(key: string): Promise<{ value: any; modRevision: string } | undefined> {
    const res = await this.client.get(key).exec();
    const kv = res.kvs[0];
    return kv ? { value: JSON.parse(kv.value.toString()), modRevision: String(kv.mod_revision) } : undefined;
  }

  /** The stored JSON, or undefined when the key is absent. */
  async value(key: string): Promise<any | undefined> {
    return (await this.entry(key))?.value;
  }

  close(): void {
    this.client.close();
  }
}

/**
 * Registers beforeAll/afterAll for a test file: starts a test server (with its own etcd) and an EtcdPeek on it,
 * hands both to `set`, and stops them after the file's tests.
 */
export function useServerWithPeek(set: (env: { ts: TestServer; peek: EtcdPeek }) => void): void {
  let ts: TestServer | undefined;
  let peek: EtcdPeek | undefined;
  beforeAll(async () => {
    ts = await startTestServer();
    peek = new EtcdPeek(ts);
    set({ ts, peek });
  }, 120_000);
  afterAll(async () => {
    peek?.close();
    await ts?.stop();
  }, 60_000);
}

/**
 * Registers beforeAll/afterAll for a test file that restarts or compacts etcd: starts an etcd of the file's own and
 * an etcd client on it, runs `beforeServer` (writes and compactions the server must not see happen), starts a test
 * server on that etcd, hands all three to `set`, and stops them after the file's tests.
 */
export function useServerWithOwnEtcd(
  set: (env: { ts: TestServer; etcd: TestEtcd; kv: Etcd3 }) => void,
  beforeServer?: (kv: Etcd3) => Promise<void>,
): void {
  let etcd: TestEtcd | undefined;
  let kv: Etcd3 | undefined;
  let ts: TestServer | undefined;
  beforeAll(async () => {
    etcd = await startTestEtcd();
    kv = new Etcd3({ hosts: etcd.endpoint });
    await beforeServer?.(kv);
    ts = await startTestServer({}, etcd);
    set({ ts, etcd, kv });
  }, 120_000);
  afterAll(async () => {
    kv?.close();
    await ts?.stop();
    await etcd?.stop();
  }, 60_000);
}
