/**
 * The ProjectSecret delivery (src/controllers/projectsecretdelivery.ts) on a real server and etcd with the host
 * cluster stand-in: each ProjectSecret is kept as a Secret of the same name in its project namespace in the host,
 *
 * - created with the ProjectSecret's data (its own, or synced from a SharedSecret: a rotation reaches the Secret),
 *   labelled and annotated with its source, type Opaque, owned by nothing in the host (no ownerReferences);
 * - updated with it, put back when edited or deleted by hand, deleted with it;
 * - never written over when a Secret of that name was not made for it (NameTaken); made again once a project
 *   namespace gone from the host exists again;
 * - a host that refuses (HostRejected, its HTTP status only) or does not answer (HostUnavailable) is reported, and
 *   the Secret written once it does;
 * - only the Secret the server made (its uid recorded in the server's own storage) is ever replaced or deleted: a
 *   Secret labelled to look like the server's, anywhere, is neither; the server watches labelled Secrets as metadata
 *   only;
 * - a ProjectSecret deleted while the host, the server or the delivery was away (its finalizers removed, say) has its
 *   Secret deleted once they are back;
 * - no value ever appears in the server's log or in a condition.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import * as errors from '../../src/apimachinery/status.js';
import { createLogger } from '../../src/log.js';
import {
  API_VERSION,
  JSON_PATCH,
  MERGE_PATCH,
  PROJECTS_PATH,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const SOURCE_NS = 'shared';
const PROJECT = uniq('deliver');
const PROJECT_NS = `p-${PROJECT}`;
const B64 = (s: string) => Buffer.from(s).toString('base64');
const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'platform-management-api' };
/** Every value written in this file, to look for in the log and the conditions. */
const VALUES = ['s3cr3t-one', 's3cr3t-two', 'by-hand', 'pw-v1', 'pw-v2', 'not-ours', 'late-ns', 'orphan-val'];

let etcd: TestEtcd;
let host: HostClusterStandIn;
let ts: TestServer;
let root: HttpClient;
const logs: string[] = [];

const projectSecretsPath = (ns = PROJECT_NS) => `${GROUP_PATH}/namespaces/${ns}/projectsecrets`;
const projectSecretPath = (name: string, ns = PROJECT_NS) => `${projectSecretsPath(ns)}/${name}`;
const hostSecret = (name: string, ns = PROJECT_NS): any => host.get('secrets', ns, name);
const condition = (obj: any, type: string) => obj?.status?.conditions?.find((c: any) => c.type === type);
const encoded = (data: Record<string, string>) => Object.fromEntries(Object.entries(data).map(([k, v]) => [k, B64(v)]));

async function startServer(overrides: Record<string, unknown> = {}): Promise<void> {
  const server = await startTestServerWithUsers(
    { root: ['system:masters'] },
    { kubeconfig: host.kubeconfigPath, projectSecretDelivery: true, ...overrides },
    etcd,
    createLogger((line) => void logs.push(line)),
  );
  root = server.as.root;
  ts = server;
}

async function createProjectSecret(name: string, spec: object, ns = PROJECT_NS): Promise<any> {
  const res = await root.post(projectSecretsPath(ns), {
    apiVersion: API_VERSION,
    kind: 'ProjectSecret',
    metadata: { name },
    spec: { owner: { user: 'root' }, ...spec },
  });
  expect(res.status).toBe(201);
  return res.body;
}

/** Waits until the host's Secret holds `data` (plain values). */
function hostHolds(name: string, data: Record<string, string>, ns = PROJECT_NS): Promise<any> {
  const want = JSON.stringify(Object.entries(encoded(data)).sort());
  return waitFor(`host Secret ${ns}/${name} to hold ${Object.keys(data).join(',') || 'nothing'}`, async () => {
    const s = hostSecret(name, ns);
    return s && JSON.stringify(Object.entries(s.data ?? {}).sort()) === want ? s : undefined;
  });
}

async function deliveredCondition(name: string, reason: string, ns = PROJECT_NS): Promise<any> {
  return waitFor(`ProjectSecret ${ns}/${name} to be ${reason}`, async () => {
    const obj = (await root.get(projectSecretPath(name, ns))).body;
    const c = condition(obj, 'SecretDelivered');
    return c?.reason === reason && c.observedGeneration === obj.metadata.generation ? c : undefined;
  });
}

beforeAll(async () => {
  etcd = await startTestEtcd();
  host = await startHostCluster();
  host.addNamespace(SOURCE_NS);
  host.addNamespace(PROJECT_NS);
  await startServer();
  const project = await root.post(PROJECTS_PATH, {
    apiVersion: API_VERSION,
    kind: 'Project',
    metadata: { name: PROJECT },
  });
  expect(project.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
  await etcd?.stop();
}, 60_000);

describe('a ProjectSecret with its own data', () => {
  const name = uniq('own');
  let uid: string;

  test('is created in the host as an Opaque Secret labelled with its source, owned by nothing', async () => {
    uid = (await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) })).metadata.uid;
    const secret = await hostHolds(name, { token: 's3cr3t-one' });
    expect(secret.type).toBe('Opaque');
    expect(secret.metadata.labels).toEqual({ ...MANAGED_BY, 'management.platform.sh/source-uid': uid });
    expect(secret.metadata.annotations).toEqual({
      'management.platform.sh/source': `ProjectSecret ${PROJECT_NS}/${name}`,
    });
    expect(secret.metadata.ownerReferences).toBeUndefined();
    expect(await deliveredCondition(name, 'Delivered')).toMatchObject({
      status: 'True',
      message: `kept as Secret ${PROJECT_NS}/${name} in the host cluster (1 key(s)), for workloads to mount`,
    });
  });

  test('follows an update of the data', async () => {
    const res = await root.patch(
      projectSecretPath(name),
      { spec: { data: encoded({ token: 's3cr3t-two' }) } },
      MERGE_PATCH,
    );
    expect(res.status).toBe(200);
    await hostHolds(name, { token: 's3cr3t-two' });
  });

  test('is put back when edited by hand, labels and data', async () => {
    const edited = hostSecret(name);
    edited.data = encoded({ token: 'by-hand', extra: 'by-hand' });
    edited.metadata.labels = { ...edited.metadata.labels, 'added-by': 'hand' };
    host.put(edited);
    const back = await waitFor('the edit to be undone', async () => {
      const s = hostSecret(name);
      return s && !s.metadata.labels['added-by'] ? s : undefined;
    });
    expect(back.data).toEqual(encoded({ token: 's3cr3t-two' }));
  });

  test('is made again when deleted by hand', async () => {
    const before = hostSecret(name).metadata.uid;
    expect(host.remove('secrets', PROJECT_NS, name)).toBe(true);
    const again = await hostHolds(name, { token: 's3cr3t-two' });
    expect(again.metadata.uid).not.toBe(before);
  });

  test('is deleted with the ProjectSecret', async () => {
    expect((await root.delete(projectSecretPath(name))).status).toBe(200);
    await waitFor('the host Secret to be deleted', async () => !hostSecret(name));
  });
});

describe('a ProjectSecret synced from a SharedSecret', () => {
  test('the host Secret follows a rotation of the SharedSecret', async () => {
    const source = uniq('registry');
    const created = await root.post(sharedSecretsPath(SOURCE_NS), {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: { name: source },
      // The ProjectSecret's owner may read it: the sync copies only what its owner may get.
      spec: { data: encoded({ password: 'pw-v1' }), access: [{ verbs: ['get'], users: ['root'] }] },
    });
    expect(created.status).toBe(201);
    const name = uniq('synced');
    await createProjectSecret(name, { sharedSecretRef: { namespace: SOURCE_NS, name: source } });
    const secret = await hostHolds(name, { password: 'pw-v1' });
    expect(secret.metadata.annotations['management.platform.sh/shared-secret']).toBe(`${SOURCE_NS}/${source}`);
    const rotated = await root.patch(
      sharedSecretPath(SOURCE_NS, source),
      { spec: { data: encoded({ password: 'pw-v2' }) } },
      MERGE_PATCH,
    );
    expect(rotated.status).toBe(200);
    await hostHolds(name, { password: 'pw-v2' });
    // The source gone: the synced data goes from the ProjectSecret, and so from the workloads' Secret.
    expect((await root.delete(sharedSecretPath(SOURCE_NS, source))).status).toBe(200);
    await hostHolds(name, {});
  });
});

describe("what is not the server's to write", () => {
  test('a Secret of that name made by someone else is left alone, and the condition says so', async () => {
    const name = uniq('taken');
    host.addSecret(PROJECT_NS, name, { mine: 'not-ours' });
    await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) });
    const c = await deliveredCondition(name, 'NameTaken');
    expect(c.status).toBe('False');
    expect(c.message).toContain(`Secret ${PROJECT_NS}/${name} in the host cluster that this server did not make`);
    expect(hostSecret(name).data).toEqual(encoded({ mine: 'not-ours' }));
    // Deleting the ProjectSecret does not delete someone else's Secret either.
    expect((await root.delete(projectSecretPath(name))).status).toBe(200);
    await waitFor('the ProjectSecret to be gone', async () => (await root.get(projectSecretPath(name))).status === 404);
    expect(hostSecret(name).data).toEqual(encoded({ mine: 'not-ours' }));
  });

  test('a project namespace gone from the host: the Secret comes back once it exists again', async () => {
    const project = uniq('late');
    const ns = `p-${project}`;
    host.addNamespace(ns);
    const res = await root.post(PROJECTS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name: project },
    });
    expect(res.status).toBe(201);
    const name = uniq('ps');
    await createProjectSecret(name, { data: encoded({ token: 'late-ns' }) }, ns);
    await hostHolds(name, { token: 'late-ns' }, ns);
    // Its Secret goes with it; making it again fails until the namespace is back (the ProjectSecret's own
    // namespace then refuses writes, as kube's NamespaceLifecycle does, so only the log can say it).
    host.removeNamespace(ns);
    await waitFor('the retries to be logged', () =>
      logs.some((l) => l.includes('will retry') && l.includes(`create secrets ${ns}/${name}`)),
    );
    host.addNamespace(ns);
    // Retried with a backoff (at most a minute between tries).
    await waitFor(
      'the Secret to be made again',
      async () => hostSecret(name, ns)?.data?.token === B64('late-ns'),
      70_000,
    );
  }, 90_000);
});

describe('when the host fails', () => {
  test('a refused write is reported with its HTTP status only, and tried again', async () => {
    const name = uniq('refused');
    host.onRequest = (method, path) => {
      if (method === 'POST' && path.endsWith('/secrets'))
        throw errors.forbidden({ group: '', resource: 'secrets' }, '', 'the stand-in refuses (s3cr3t-one)');
    };
    try {
      await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) });
      expect(await deliveredCondition(name, 'HostRejected')).toMatchObject({
        status: 'False',
        message:
          "the host cluster refused to write the Secret (HTTP 403); the server's log says why, and it is tried again",
      });
    } finally {
      host.onRequest = undefined;
    }
    await hostHolds(name, { token: 's3cr3t-one' });
    await deliveredCondition(name, 'Delivered');
  });

  test('a host that does not answer is reported; the change reaches the Secret once it does', async () => {
    const name = uniq('down');
    await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) });
    await hostHolds(name, { token: 's3cr3t-one' });
    await host.setDown(true);
    try {
      const res = await root.patch(
        projectSecretPath(name),
        { spec: { data: encoded({ token: 's3cr3t-two' }) } },
        MERGE_PATCH,
      );
      expect(res.status).toBe(200);
      expect(await deliveredCondition(name, 'HostUnavailable')).toMatchObject({
        status: 'False',
        message: 'the host cluster did not answer; the Secret is written once it does',
      });
    } finally {
      await host.setDown(false);
    }
    await hostHolds(name, { token: 's3cr3t-two' });
    await deliveredCondition(name, 'Delivered');
  }, 60_000);
});

describe('only what the server made: labels are believed for nothing', () => {
  const SOURCE_UID = 'management.platform.sh/source-uid';
  const labelled = (name: string, ns: string, uid: string, data: Record<string, string>) => {
    host.addSecret(ns, name, data);
    const s = hostSecret(name, ns);
    s.metadata.labels = { ...MANAGED_BY, [SOURCE_UID]: uid };
    host.put(s);
  };

  test("a Secret anywhere labelled with a ProjectSecret's uid is neither deleted nor written", async () => {
    const name = uniq('real');
    const uid = (await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) })).metadata.uid;
    await hostHolds(name, { token: 's3cr3t-one' });
    labelled('decoy', SOURCE_NS, uid, { mine: 'not-ours' });
    labelled(uniq('decoy'), PROJECT_NS, uid, { mine: 'not-ours' });
    const decoys = () =>
      [...host.list('secrets', SOURCE_NS), ...host.list('secrets', PROJECT_NS)].filter(
        (s: any) => s.metadata.labels?.[SOURCE_UID] === uid && s.metadata.name !== name,
      );
    expect(decoys()).toHaveLength(2);
    // The ProjectSecret is reconciled (a change of its data), and deleted: the decoys stay as they were.
    expect(
      (await root.patch(projectSecretPath(name), { spec: { data: encoded({ token: 's3cr3t-two' }) } }, MERGE_PATCH))
        .status,
    ).toBe(200);
    await hostHolds(name, { token: 's3cr3t-two' });
    expect((await root.delete(projectSecretPath(name))).status).toBe(200);
    await waitFor('its own Secret to be deleted', async () => !hostSecret(name));
    await waitFor('the ProjectSecret to be gone', async () => (await root.get(projectSecretPath(name))).status === 404);
    expect(decoys().map((s: any) => s.data)).toEqual([encoded({ mine: 'not-ours' }), encoded({ mine: 'not-ours' })]);
  });

  test("someone else's Secret at the name, labelled afterwards to look like the server's: still not the server's", async () => {
    const name = uniq('taken');
    host.addSecret(PROJECT_NS, name, { mine: 'not-ours' });
    const uid = (await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) })).metadata.uid;
    await deliveredCondition(name, 'NameTaken');
    const s = hostSecret(name);
    s.metadata.labels = { ...MANAGED_BY, [SOURCE_UID]: uid };
    host.put(s);
    // A change of the ProjectSecret reconciles it with the relabelled Secret there.
    expect(
      (await root.patch(projectSecretPath(name), { spec: { data: encoded({ token: 's3cr3t-two' }) } }, MERGE_PATCH))
        .status,
    ).toBe(200);
    expect((await deliveredCondition(name, 'NameTaken')).message).toContain(
      'that this server did not make for this ProjectSecret',
    );
    expect(hostSecret(name).data).toEqual(encoded({ mine: 'not-ours' }));
    expect((await root.delete(projectSecretPath(name))).status).toBe(200);
    await waitFor('the ProjectSecret to be gone', async () => (await root.get(projectSecretPath(name))).status === 404);
    expect(hostSecret(name).data).toEqual(encoded({ mine: 'not-ours' }));
  });

  test('the host is asked for the metadata of labelled Secrets only, never for their data', async () => {
    const collection = host.requests.filter((r) => r.path === '/api/v1/secrets');
    expect(collection.length).toBeGreaterThan(0);
    for (const r of collection) expect(r.accept).toMatch(/;as=PartialObjectMetadata(List)?;g=meta\.k8s\.io;v=v1$/);
    // A list only for its resourceVersion: one item.
    for (const r of collection.filter((c) => !c.query.includes('watch=')))
      expect(new URLSearchParams(r.query).get('limit')).toBe('1');
  });
});

describe("what the server made, known when a record is missing: a create's lost answer, and earlier versions", () => {
  const SOURCE_UID = 'management.platform.sh/source-uid';

  test("a create whose answer was lost: the Secret it made is the server's, taken by its intent", async () => {
    const name = uniq('lost');
    // The host makes the Secret as asked, and the answer does not come back.
    let lost = false;
    host.onRequest = (method, _path, body) => {
      if (lost || method !== 'POST' || body?.metadata?.name !== name) return;
      lost = true;
      throw errors.serviceUnavailable('the answer was lost (stand-in)');
    };
    try {
      const uid = (await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) })).metadata.uid;
      await waitFor('the first create to be tried', () => lost);
      // What the lost create made, as the server would have made it.
      host.addSecret(PROJECT_NS, name, { token: 's3cr3t-one' });
      const made = hostSecret(name);
      made.metadata.labels = { ...MANAGED_BY, [SOURCE_UID]: uid };
      made.metadata.annotations = { 'management.platform.sh/source': `ProjectSecret ${PROJECT_NS}/${name}` };
      host.put(made);
    } finally {
      host.onRequest = undefined;
    }
    expect((await deliveredCondition(name, 'Delivered')).status).toBe('True');
    const adopted = hostSecret(name).metadata.uid;
    // It is the server's now: deleted with the ProjectSecret.
    expect((await root.delete(projectSecretPath(name))).status).toBe(200);
    await waitFor('the Secret it made to be deleted', async () => hostSecret(name)?.metadata.uid !== adopted);
    expect(hostSecret(name)).toBeUndefined();
  });

  test("an earlier version's Secrets are the server's once, at the first start with records; not after", async () => {
    const kv = new Etcd3({ hosts: etcd.endpoint });
    const prefix = ts.config.etcdPrefix;
    const records = `${prefix}/delivered/projectsecrets/`;
    try {
      const name = uniq('earlier');
      const uid = (await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) })).metadata.uid;
      const delivered = await hostHolds(name, { token: 's3cr3t-one' });
      // As an earlier version left it: the Secret, labelled, and no records at all.
      await ts.stop();
      await kv.delete().prefix(`${prefix}/delivered/`);
      await startServer({ etcdPrefix: prefix });
      expect((await deliveredCondition(name, 'Delivered')).status).toBe('True');
      expect(hostSecret(name).metadata.uid).toBe(delivered.metadata.uid);
      await waitFor('its record', async () => (await kv.get(records + uid).string()) !== null);
      // Once taken over, a label is no proof: without its record, the same Secret is someone else's.
      await waitFor(
        'the migration to be recorded',
        async () => (await kv.get(`${prefix}/delivered/migrated/projectsecrets`).string()) !== null,
      );
      await ts.stop();
      await kv.delete().key(records + uid);
      await startServer({ etcdPrefix: prefix });
      expect((await deliveredCondition(name, 'NameTaken')).status).toBe('False');
    } finally {
      kv.close();
    }
  }, 60_000);
});

describe('a deletion while the host or the delivery was away', () => {
  test('the host down: its Secret goes once the host is back, after a restart too', async () => {
    const name = uniq('away');
    const kept = uniq('kept');
    await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) });
    await createProjectSecret(kept, { data: encoded({ token: 's3cr3t-one' }) });
    await hostHolds(name, { token: 's3cr3t-one' });
    const keptSecret = await hostHolds(kept, { token: 's3cr3t-one' });
    await host.setDown(true);
    try {
      expect((await root.delete(projectSecretPath(name))).status).toBe(200);
      await ts.stop();
    } finally {
      await host.setDown(false);
    }
    expect(hostSecret(name)).toBeDefined();
    await startServer({ etcdPrefix: ts.config.etcdPrefix });
    await waitFor('the Secret to be deleted', async () => !hostSecret(name));
    expect(hostSecret(kept).metadata.uid).toBe(keptSecret.metadata.uid);
  }, 60_000);

  test('deleted while no delivery ran (a server without it), its finalizers removed: its Secret goes once delivery runs again', async () => {
    const name = uniq('nodelivery');
    await createProjectSecret(name, { data: encoded({ token: 's3cr3t-one' }) });
    await hostHolds(name, { token: 's3cr3t-one' });
    const prefix = ts.config.etcdPrefix;
    await ts.stop();
    await startServer({ etcdPrefix: prefix, projectSecretDelivery: false });
    const path = projectSecretPath(name);
    // Its owner removes every finalizer first (as the review's tenant did with the delivery's), then deletes it.
    expect((await root.patch(path, [{ op: 'remove', path: '/metadata/finalizers' }], JSON_PATCH)).status).toBe(200);
    expect((await root.delete(path)).status).toBe(200);
    await waitFor('the ProjectSecret to be gone', async () => (await root.get(path)).status === 404);
    await ts.stop();
    expect(hostSecret(name)).toBeDefined();
    await startServer({ etcdPrefix: prefix });
    await waitFor('the Secret to be deleted', async () => !hostSecret(name));
  }, 60_000);

  test('after a restart, a labelled Secret of no ProjectSecret is left alone', async () => {
    const stray = uniq('stray');
    host.addSecret(PROJECT_NS, stray, { token: 'orphan-val' });
    const left = hostSecret(stray);
    left.metadata.labels = {
      ...MANAGED_BY,
      'management.platform.sh/source-uid': '7d2c4f0e-0000-4000-8000-000000000000',
    };
    host.put(left);
    await ts.stop();
    await startServer({ etcdPrefix: ts.config.etcdPrefix });
    // Something the new server surely reconciled since it started: a new ProjectSecret's Secret.
    const probe = uniq('probe');
    await createProjectSecret(probe, { data: encoded({ token: 's3cr3t-one' }) });
    await hostHolds(probe, { token: 's3cr3t-one' });
    expect(hostSecret(stray).data).toEqual(encoded({ token: 'orphan-val' }));
  }, 60_000);
});

test('no value ever appears in the log or in a condition', async () => {
  const res = await root.get(projectSecretsPath());
  const text = logs.join('\n') + JSON.stringify(res.body.items.map((o: any) => o.status));
  for (const value of VALUES) {
    expect(text).not.toContain(value);
    expect(text).not.toContain(B64(value));
  }
});
