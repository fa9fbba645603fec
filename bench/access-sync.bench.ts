/**
 * How long 1,000 SharedSecrets with access entries take to converge into host RBAC (the host cluster stand-in over
 * HTTPS, a real server and etcd), and how long deleting them all takes until no generated object is left.
 * Asserts nothing about time; writes a markdown report to bench/.results/access-sync.md (and to the console).
 *
 *   npm run bench:access            # OBJECTS=1000 CONCURRENCY=20 by default
 */
import { afterAll, beforeAll, test } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { secretBody, sharedSecretsPath } from '../test/support/fixtures.js';
import { startHostCluster, type HostClusterStandIn } from '../test/support/hostcluster.js';
import { startTestServer, type TestServer } from '../test/support/server.js';

const OBJECTS = Number(process.env.OBJECTS ?? 1000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 20);
const NS = 'bench';

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

async function inParallel(n: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function until(fn: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await fn())) await new Promise((r) => setTimeout(r, 100));
}

const generatedCount = () => host.list('roles', NS).length + host.list('rolebindings', NS).length;

async function syncedCount(): Promise<number> {
  const list = (await ts.admin.get(sharedSecretsPath(NS))).body.items as any[];
  return list.filter((o) =>
    o.status?.conditions?.some(
      (c: any) => c.type === 'AccessSynced' && c.status === 'True' && c.observedGeneration === o.metadata.generation,
    ),
  ).length;
}

test(`${OBJECTS} SharedSecrets with access converge into host RBAC`, async () => {
  const t0 = performance.now();
  await inParallel(OBJECTS, async (i) => {
    const body = secretBody(`s-${i}`);
    body.spec.access = [
      { verbs: ['get', 'list'], users: [`user-${i}`] },
      { verbs: ['update'], teams: [`team-${i % 10}`] },
    ];
    const res = await ts.admin.post(sharedSecretsPath(NS), body);
    if (res.status !== 201) throw new Error(`create s-${i}: ${res.status} ${res.text}`);
  });
  const created = performance.now();
  await until(() => generatedCount() === OBJECTS * 4);
  const rbacDone = performance.now();
  await until(async () => (await syncedCount()) === OBJECTS);
  const conditionsDone = performance.now();

  const del = await ts.admin.delete(sharedSecretsPath(NS));
  if (del.status !== 200) throw new Error(`deletecollection: ${del.status}`);
  const deleteAsked = performance.now();
  await until(
    async () => generatedCount() === 0 && (await ts.admin.get(sharedSecretsPath(NS))).body.items.length === 0,
  );
  const deleted = performance.now();

  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const report = [
    `## Access sync: ${OBJECTS} SharedSecrets, 2 access entries each (${OBJECTS * 4} Roles and RoleBindings)`,
    '',
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; host = test/support stand-in over HTTPS; ${CONCURRENCY} concurrent creates.`,
    '',
    '| Step | Time |',
    '|---|---|',
    `| create ${OBJECTS} objects over HTTPS | ${s(created - t0)} |`,
    `| every Role and RoleBinding in the host (from the first create) | ${s(rbacDone - t0)} |`,
    `| every object AccessSynced=True (from the first create) | ${s(conditionsDone - t0)} |`,
    `| … of which after the last create | ${s(conditionsDone - created)} |`,
    `| deletecollection answered | ${s(deleteAsked - conditionsDone)} |`,
    `| every object and every generated RBAC object gone (from the deletecollection) | ${s(deleted - conditionsDone)} |`,
    '',
  ].join('\n');
  mkdirSync('bench/.results', { recursive: true });
  writeFileSync('bench/.results/access-sync.md', report);
  process.stdout.write(`\n${report}\n`);
});
