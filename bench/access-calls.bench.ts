/**
 * What one access change costs the host cluster: the RBAC requests the access sync sends (counted at the host
 * cluster stand-in, over HTTPS, from a real server on a real etcd) and the RBAC objects the source has there after
 * it, for a SharedSecret going through the steps of the test below. Counts, not times: they do not depend on the
 * machine. The list and watch requests of the sync's informers are left out (they do not grow with changes).
 * Writes a markdown report to bench/.results/access-calls.md (and to the console).
 *
 *   npm run bench:access -- bench/access-calls.bench.ts      # ENTRIES=62 by default
 *
 * ENTRIES is the length of the list created first; two entries are added to it later, so 62 ends at the limit of 64.
 */
import { afterAll, beforeAll, test } from '@jest/globals';
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { JSON_PATCH, MERGE_PATCH, secretBody, sharedSecretPath, sharedSecretsPath } from '../test/support/fixtures.js';
import { startHostCluster, type HostClusterStandIn } from '../test/support/hostcluster.js';
import { startTestServer, type TestServer } from '../test/support/server.js';

const ENTRIES = Number(process.env.ENTRIES ?? 62);
/** The size of the security review's PATCH (issue 24, finding 6): 2,000 entries, about 79 kB. */
const FLOOD = 2000;
const NS = 'bench';
const RBAC_RESOURCES = ['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'];
const UID_LABEL = 'management.platform.sh/source-uid';
/** Four sets of verbs, as an access list of a shared secret might have them. */
const TYPICAL_VERBS = [['get'], ['get', 'list', 'watch'], ['get', 'update', 'patch'], ['*']];
/** All eight verbs a request can have: each entry of the worst case takes a subset of them no other entry has. */
const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

let host: HostClusterStandIn;
let ts: TestServer;

beforeAll(async () => {
  host = await startHostCluster();
  host.addNamespace(NS);
  ts = await startTestServer({ kubeconfig: host.kubeconfigPath, leaderElectLeaseDurationMs: 2000 });
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
});

const entry = (i: number, verbs: string[]) => ({ verbs, users: [`user-${i}`, `user-${i + 1}`], teams: [`team-${i}`] });
const typical = (n: number) => Array.from({ length: n }, (_, i) => entry(i, TYPICAL_VERBS[i % TYPICAL_VERBS.length]));
/** Entry i grants the verbs of the bits of i + 1: every entry a different set. */
const distinct = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    entry(
      i,
      VERBS.filter((_, b) => ((i + 1) >> b) & 1),
    ),
  );

async function until(fn: () => Promise<unknown> | unknown): Promise<void> {
  while (!(await fn())) await new Promise((r) => setTimeout(r, 50));
}

/** Until the object reports AccessSynced (True or False) for its current generation. */
async function synced(name: string): Promise<any> {
  let obj: any;
  await until(async () => {
    obj = (await ts.admin.get(sharedSecretPath(NS, name))).body;
    const c = obj?.status?.conditions?.find((x: any) => x.type === 'AccessSynced');
    return c && c.observedGeneration === obj.metadata.generation;
  });
  return obj;
}

/** The RBAC requests the host received since the last reset, by method (GET by name only: no lists, no watches). */
function calls(): Record<'GET' | 'POST' | 'PUT' | 'DELETE', number> {
  const rbac = host.requests.filter((r) => RBAC_RESOURCES.includes(r.resource) && r.query === '');
  const of = (m: string) => rbac.filter((r) => r.method === m).length;
  return { GET: of('GET'), POST: of('POST'), PUT: of('PUT'), DELETE: of('DELETE') };
}

const objectsOf = (uid: string) =>
  ['roles', 'rolebindings']
    .flatMap((r) => host.list(r as any, NS))
    .filter((o) => o.metadata.labels?.[UID_LABEL] === uid).length;

const rows: string[] = [];

/**
 * Makes a change and waits for its outcome (`synced`: the object reports AccessSynced for its new generation;
 * `gone`: the object is deleted, its RBAC first), unless the API refuses it; then notes what the host received.
 */
async function step(
  what: string,
  name: string,
  outcome: 'synced' | 'gone',
  change: () => Promise<{ status: number; body?: any }>,
): Promise<void> {
  host.resetCounts();
  const res = await change();
  let after: string;
  if (res.status >= 300) {
    after = `refused: ${res.status} ${res.body?.reason ?? ''}`;
  } else if (outcome === 'gone') {
    await until(async () => (await ts.admin.get(sharedSecretPath(NS, name))).status === 404);
    after = '0';
  } else {
    after = String(objectsOf((await synced(name)).metadata.uid));
  }
  const c = calls();
  const total = c.GET + c.POST + c.PUT + c.DELETE;
  rows.push(`| ${what} | ${c.GET} | ${c.POST} | ${c.PUT} | ${c.DELETE} | **${total}** | ${after} |`);
}

const create = (name: string, access: unknown[]) => () => {
  const body = secretBody(name);
  body.spec.access = access;
  return ts.admin.post(sharedSecretsPath(NS), body);
};
const patch = (name: string, ops: unknown[]) => ts.admin.patch(sharedSecretPath(NS, name), ops, JSON_PATCH);

test('the host calls of access changes', async () => {
  const n = ENTRIES;
  await step(`create with ${n} entries (4 sets of verbs)`, 'typical', 'synced', create('typical', typical(n)));
  await step('add one user to an entry', 'typical', 'synced', () =>
    patch('typical', [{ op: 'add', path: '/spec/access/10/users/-', value: 'newcomer' }]),
  );
  await step('add one entry with verbs another entry has', 'typical', 'synced', () =>
    patch('typical', [{ op: 'add', path: '/spec/access/-', value: { verbs: ['get'], users: ['late'] } }]),
  );
  await step('add one entry with verbs no entry has', 'typical', 'synced', () =>
    patch('typical', [{ op: 'add', path: '/spec/access/-', value: { verbs: ['delete'], users: ['later'] } }]),
  );
  await step('remove the first entry', 'typical', 'synced', () =>
    patch('typical', [{ op: 'remove', path: '/spec/access/0' }]),
  );
  await step('delete the object', 'typical', 'gone', () => ts.admin.delete(sharedSecretPath(NS, 'typical')));

  // The most one object can ask for within the limits: 64 entries, each with a set of verbs of its own.
  await step(
    'create with 64 entries, each with verbs no other has',
    'distinct',
    'synced',
    create('distinct', distinct(64)),
  );
  await step('delete the object', 'distinct', 'gone', () => ts.admin.delete(sharedSecretPath(NS, 'distinct')));

  // The review's PATCH: the owner of one object turns a short list into 2,000 entries.
  await step('create with 1 entry', 'flood', 'synced', create('flood', [entry(0, ['get'])]));
  const flood = { spec: { access: Array.from({ length: FLOOD }, (_, i) => ({ verbs: ['get'], users: [`u-${i}`] })) } };
  await step(
    `merge patch setting ${FLOOD} entries of one user each (${JSON.stringify(flood).length} bytes)`,
    'flood',
    'synced',
    () => ts.admin.patch(sharedSecretPath(NS, 'flood'), flood, MERGE_PATCH),
  );
  await step('delete the object', 'flood', 'gone', () => ts.admin.delete(sharedSecretPath(NS, 'flood')));

  const commit = execSync('git rev-parse --short HEAD').toString().trim();
  const dirty = execSync('git status --porcelain -- src crds').toString().trim().split('\n').filter(Boolean).length;
  const report = [
    `## Access sync: host calls per access change`,
    '',
    `Commit ${commit} (${dirty} uncommitted change(s) under src/ and crds/); ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; host = test/support stand-in over HTTPS.`,
    '',
    '| Change | GET | POST | PUT | DELETE | Host calls | RBAC objects of the source after |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  mkdirSync('bench/.results', { recursive: true });
  writeFileSync('bench/.results/access-calls.md', report);
  process.stdout.write(`\n${report}\n`);
});
