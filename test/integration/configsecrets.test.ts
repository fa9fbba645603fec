/**
 * Where the Clusters' config Secrets are read (src/clusters/configsecrets.ts), against a host stand-in: the Secrets
 * of the watched namespace come from a copy kept by list and watch (no GET per read, a change seen through the
 * watch), a Secret the copy does not have is read by name (so a new one counts at once, and a 404 is the answer),
 * Secrets of other namespaces are read by name, and a host that does not let the server list the namespace is read
 * by name, as before the watch, with one line in the log.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ConfigSecrets } from '../../src/clusters/configsecrets.js';
import { HostCluster, HostClusterError } from '../../src/host/cluster.js';
import * as errors from '../../src/apimachinery/status.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { waitFor } from '../support/wait.js';

const NS = 'platform';
let host: HostClusterStandIn;
const running: ConfigSecrets[] = [];

beforeAll(async () => {
  host = await startHostCluster();
  host.addNamespace(NS);
  host.addNamespace('elsewhere');
}, 60_000);

afterAll(async () => {
  for (const s of running) s.stop();
  await host?.stop();
});

function configSecrets(log: string[] = []): ConfigSecrets {
  const secrets = new ConfigSecrets(HostCluster.load({ kubeconfig: host.kubeconfigPath })!, {
    watchedNamespace: NS,
    timeoutMs: 5_000,
    log: (msg, fields) => log.push(`${msg} ${JSON.stringify(fields)}`),
  });
  running.push(secrets);
  return secrets;
}

/** The GETs of one Secret by name that reached the host. */
const reads = (namespace: string, name: string) =>
  host.requests.filter((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/${namespace}/secrets/${name}`)
    .length;

const dataOf = (secret: unknown) => (secret as { data: Record<string, string> }).data;
const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('config Secrets', () => {
  test('the watched namespace is read from a copy: no GET per read, a change seen through the watch', async () => {
    host.addSecret(NS, 'watched', { config: 'one' });
    const secrets = configSecrets();
    // The first read comes before the copy is synced: by name.
    expect(dataOf(await secrets.get(NS, 'watched', 'reading it')).config).toBe(b64('one'));
    await waitFor('the copy to have the Secret', async () => {
      const before = reads(NS, 'watched');
      await secrets.get(NS, 'watched', 'reading it');
      return reads(NS, 'watched') === before;
    });
    const before = reads(NS, 'watched');
    for (let i = 0; i < 5; i++) await secrets.get(NS, 'watched', 'reading it');
    expect(reads(NS, 'watched')).toBe(before);

    host.addSecret(NS, 'watched', { config: 'two' });
    await waitFor('the change to reach the copy', async () => {
      const s = await secrets.get(NS, 'watched', 'reading it');
      return dataOf(s).config === b64('two');
    });
    expect(reads(NS, 'watched')).toBe(before);
  }, 30_000);

  test('a Secret the copy does not have is read by name: a new one at once, a missing one 404', async () => {
    const secrets = configSecrets();
    host.addSecret(NS, 'early', { config: 'x' });
    await secrets.get(NS, 'early', 'reading it');
    await waitFor('the copy to sync', async () => {
      const before = reads(NS, 'early');
      await secrets.get(NS, 'early', 'reading it');
      return reads(NS, 'early') === before;
    });
    host.addSecret(NS, 'new', { config: 'fresh' });
    expect(dataOf(await secrets.get(NS, 'new', 'reading it')).config).toBe(b64('fresh'));
    const missing: unknown = await secrets.get(NS, 'absent', 'reading the absent one').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(HostClusterError);
    expect((missing as HostClusterError).code).toBe(404);
  }, 30_000);

  test('another namespace is read by name at every read', async () => {
    host.addSecret('elsewhere', 'other', { config: 'o' });
    const secrets = configSecrets();
    const before = reads('elsewhere', 'other');
    for (let i = 0; i < 3; i++) await secrets.get('elsewhere', 'other', 'reading it');
    expect(reads('elsewhere', 'other')).toBe(before + 3);
  });

  test('a host that does not let the server list the namespace: read by name, said once in the log', async () => {
    host.addSecret(NS, 'by-name', { config: 'n' });
    for (const s of running.splice(0)) s.stop();
    const listed = () => host.requests.filter((r) => r.path === `/api/v1/namespaces/${NS}/secrets`).length;
    const listsBefore = listed();
    host.onRequest = (method, path) => {
      if (method === 'GET' && path === `/api/v1/namespaces/${NS}/secrets`)
        throw errors.forbidden({ group: '', resource: 'secrets' }, '', 'User "server" cannot list');
    };
    try {
      const log: string[] = [];
      const secrets = configSecrets(log);
      const before = reads(NS, 'by-name');
      for (let i = 0; i < 3; i++) expect(dataOf(await secrets.get(NS, 'by-name', 'reading it')).config).toBe(b64('n'));
      expect(reads(NS, 'by-name')).toBe(before + 3);
      // Asked once; not again until RELIST_FORBIDDEN_MS has passed.
      expect(listed() - listsBefore).toBe(1);
      expect(log.filter((l) => l.includes('may not list'))).toHaveLength(1);
    } finally {
      host.onRequest = undefined;
    }
  });
});
