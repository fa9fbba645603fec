/**
 * The registry's kinds against the CRDs, with a real etcd behind it: a strategy whose kind no CRD defines stops the
 * start with a message naming it, instead of the kind being served without its rules.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { kinds } from '../../src/kinds/index.js';
import { ProjectSecret } from '../../src/kinds/projectsecret/types.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import { Registry } from '../../src/registry/registry.js';
import { EtcdStorage } from '../../src/storage/etcd.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';

let etcd: TestEtcd;
let storage: EtcdStorage;
const prefix = `/test-${randomUUID()}`;

beforeAll(async () => {
  etcd = await startTestEtcd();
  storage = new EtcdStorage({ endpoints: [etcd.endpoint] });
}, 30_000);

afterAll(async () => {
  await storage?.close();
  await etcd?.stop();
});

describe('strategies and CRDs', () => {
  test('every strategy names a kind the CRDs define: the registry starts and serves each kind', async () => {
    const registry = new Registry(loadDefinitions(), storage, prefix);
    await registry.start();
    try {
      expect(registry.lookupKind('management.platform.sh/v1', 'Cluster')?.def.plural).toBe('clusters');
      expect(registry.lookupKind('management.platform.sh/v1', 'Clusters')).toBeUndefined();
    } finally {
      await registry.stop();
    }
  });

  test('each kind of the index has its store by its handle, and a handle of a kind not served fails naming it', () => {
    const registry = new Registry(loadDefinitions(), storage, prefix);
    for (const { ref, strategy } of kinds) {
      expect(registry.store(ref).def.plural).toBe(ref.plural);
      expect(registry.store(ref).strategy).toBe(strategy);
    }
    expect(registry.store(ProjectSecret)).toBe(registry.lookup('management.platform.sh', 'v1', 'projectsecrets'));
    const unserved = { apiVersion: 'management.platform.sh/v1', kind: 'Flunder', plural: 'flunders' };
    expect(() => registry.store(unserved)).toThrow(
      'this server serves no Flunder (management.platform.sh/v1): no CRD in crds/ defines it',
    );
  });

  test('a strategy whose kind no CRD defines stops the start, naming the kind and the kinds the CRDs define', () => {
    const withoutClusters = loadDefinitions().filter((d) => d.kind !== 'Cluster');
    const others = kindNames().filter((k) => k !== 'Cluster');
    expect(() => new Registry(withoutClusters, storage, prefix)).toThrow(
      `src/kinds/index.ts has a strategy for the kind "Cluster", which no CRD in crds/ defines (the CRDs define ${others.join(', ')}): a strategy must be keyed by the kind its CRD names (spec.names.kind), or the kind would be served without its rules`,
    );
  });

  test('several such strategies are named together', () => {
    const onlySecrets = loadDefinitions().filter((d) => d.kind === 'SharedSecret');
    const named = kindNames()
      .filter((k) => k !== 'SharedSecret')
      .map((k) => `"${k}"`)
      .join(', ');
    expect(() => new Registry(onlySecrets, storage, prefix)).toThrow(
      `strategy for the kinds ${named}, which no CRD in crds/ defines (the CRDs define SharedSecret)`,
    );
  });
});

/** The kinds of the index, sorted as the message names them. */
function kindNames(): string[] {
  return kinds.map((k) => k.ref.kind).sort();
}
