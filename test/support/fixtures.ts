/**
 * Shared fixtures for the SharedSecret and Cluster integration tests: API constants, unique names, API path
 * builders (for both path forms), the beforeAll/afterAll that start and stop a test server, and EtcdPeek for
 * reading stored objects straight from etcd. Argument order is always (namespace, name).
 */
import { beforeAll, afterAll } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { startTestServer, type TestServer } from './server.js';
import { GROUP_PATH } from './http.js';

export const GROUP = 'management.platform.sh';
export const API_VERSION = `${GROUP}/v1`;
export const JSON_PATCH = 'application/json-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';
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

export const CLUSTERS_PATH = `${GROUP_PATH}/clusters`;

export function clusterPath(name: string, prefix = ''): string {
  return `${prefix}${CLUSTERS_PATH}/${name}`;
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
