// What a tenant's Roles labelled as the server's cost the server: the access sync lists and watches the host's
// roles, rolebindings, clusterroles and clusterrolebindings labelled
// app.kubernetes.io/managed-by=platform-management-api, and anyone who may create a Role in some namespace can label
// one so (security review 3, F3; this is its reproduction, made a bench). Two rows, each a server child
// (bench/server-child.mjs, one etcd for both) with --kubeconfig pointing at a stand-in host: one with no such Roles,
// one with --roles of them [100], each with 16,000 resourceNames (0.66 MiB of JSON).
// Each row reports the peak RSS (VmHWM) until the access sync has listed and watched the Roles; then the peak is reset
// (/proc/<pid>/clear_refs), the stand-in ends the watch (as kube-apiserver does after its timeout) and the peak of the
// relist that follows is read; last the RSS, used heap and external memory after a forced GC.
// The stand-in answers /apis/rbac.authorization.k8s.io/v1/roles as kube-apiserver does: lists paged by `limit` and
// `continue` (every page at the first page's resourceVersion), a watch from a list's resourceVersion with no initial
// events, held open; the other RBAC kinds are empty, and every other path is answered as in bench/host-memory.mjs.
// It logs the limits the relist asked its pages with; a page asked for again from the same place was cut by the client.
// With --forged-names the Roles are at the names the server gives a SharedSecret's owner Role
// (platform-sharedsecret-s<i>-owner, in tenant-a), labelled with a random source-uid and annotated as made for
// `SharedSecret tenant-a/s<i>`, which does not exist: the sync takes them for RBAC of a deleted source and sweeps
// them (the stand-in answers their DELETEs 404, so they are listed again by the next relist).
// Usage: npm run build && node bench/tenant-rbac-memory.mjs [--roles 100] [--forged-names]; for another build,
// BENCH_DIST=<its dist/>; the chart's heap flags, BENCH_SERVER_NODE_ARGS='--max-old-space-size=480 --max-semi-space-size=16'.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dist, f1, forkServerChild, log, mib, sleep, startEtcd } from './lib.mjs';

const { values: args } = parseArgs({
  options: { roles: { type: 'string', default: '100' }, 'forged-names': { type: 'boolean', default: false } },
});
const IDLE_MS = 3_000;
const WATCH_TIMEOUT_MS = 120_000;
const SELECTOR = 'app.kubernetes.io/managed-by=platform-management-api';
const ROLES_PATH = '/apis/rbac.authorization.k8s.io/v1/roles';
const LIST_RV = '1000';
const dir = mkdtempSync(join(tmpdir(), 'tenant-rbac-memory-'));
const { ensureServingCertificate } = await import(new URL('pki/selfsigned.js', dist).href);
const pki = await ensureServingCertificate({ certDir: join(dir, 'pki'), hosts: [] });

const names = Array.from(
  { length: 16_000 },
  (_, i) => `configmap-with-a-fairly-long-name-${String(i).padStart(6, '0')}`,
);
/**
 * `n` Roles a tenant made in its namespace, with the server's label and 0.66 MiB of rules each; with `forged`, at
 * the owner Role's name of a SharedSecret s<i> that does not exist, labelled and annotated as made for it.
 */
const tenantRoles = (n, forged) =>
  Array.from({ length: n }, (_, i) => ({
    metadata: {
      name: forged ? `platform-sharedsecret-s${i}-owner` : `tenant-role-${String(i).padStart(4, '0')}`,
      namespace: 'tenant-a',
      uid: randomUUID(),
      resourceVersion: String(i + 1),
      labels: {
        'app.kubernetes.io/managed-by': 'platform-management-api',
        ...(forged ? { 'management.platform.sh/source-uid': randomUUID() } : {}),
      },
      ...(forged ? { annotations: { 'management.platform.sh/source': `SharedSecret tenant-a/s${i}` } } : {}),
    },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: names }],
  }));

/**
 * The stand-in host: `roles` at /apis/rbac.authorization.k8s.io/v1/roles (for the server's selector), the rest empty.
 * `watched()` resolves at the next watch of the Roles; `endWatches()` ends those open; `deletes` counts the DELETEs
 * of single Roles (answered 404).
 */
function standIn(roles) {
  const encoded = roles.map((r) => JSON.stringify(r));
  let sawWatch = () => {};
  const open = new Set();
  const lists = [];
  const deletes = { count: 0 };
  const server = createServer({ cert: pki.certPem, key: pki.keyPem }, (req, res) => {
    const url = new URL(req.url, 'https://x');
    const q = url.searchParams;
    const watch = q.get('watch') === 'true';
    res.setHeader('content-type', 'application/json');
    if (req.method === 'GET' && url.pathname === ROLES_PATH) {
      const items = q.get('labelSelector') === SELECTOR ? encoded : [];
      if (watch) {
        open.add(res);
        res.on('close', () => open.delete(res));
        res.writeHead(200).flushHeaders();
        return sawWatch();
      }
      // A chunk: `continue` is the offset of the next item.
      const from = Number(q.get('continue') || 0);
      const limit = Number(q.get('limit') || 0);
      const page = limit > 0 ? items.slice(from, from + limit) : items.slice(from);
      const left = items.length - from - page.length;
      const metadata = { resourceVersion: LIST_RV, ...(left > 0 ? { continue: String(from + page.length) } : {}) };
      lists.push({ continue: q.get('continue') ?? '', limit });
      const chunks = [
        `{"kind":"RoleList","apiVersion":"rbac.authorization.k8s.io/v1","metadata":${JSON.stringify(metadata)},"items":[`,
      ];
      page.forEach((r, i) => chunks.push(`${i ? ',' : ''}${r}`));
      chunks.push(']}');
      let next = 0;
      const write = () => {
        while (next < chunks.length) if (!res.write(chunks[next++])) return res.once('drain', write);
        res.end();
      };
      return write();
    }
    if (req.method === 'DELETE' && url.pathname.startsWith('/apis/rbac.authorization.k8s.io/v1/namespaces/'))
      deletes.count++;
    if (req.method === 'GET' && watch) return res.writeHead(200).flushHeaders();
    if (req.method === 'POST' && /reviews$/.test(url.pathname))
      return req.resume().on('end', () => res.end('{"status":{}}'));
    if (req.method === 'GET' && url.pathname === '/version') return res.end('{"gitVersion":"v1.33.0"}');
    if (req.method === 'GET' && !/extension-apiserver-authentication/.test(url.pathname))
      return res.end('{"kind":"List","items":[],"metadata":{"resourceVersion":"1"}}');
    res.writeHead(404).end('{"kind":"Status","status":"Failure","reason":"NotFound","code":404}');
  });
  const watched = () =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no watch of ${ROLES_PATH} within ${WATCH_TIMEOUT_MS / 1000} s`)),
        WATCH_TIMEOUT_MS,
      );
      sawWatch = () => {
        clearTimeout(timer);
        sawWatch = () => {};
        resolve();
      };
    });
  const endWatches = () => {
    for (const res of open) res.end();
  };
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, watched, endWatches, lists, deletes })),
  );
}

const kubeconfigText = (port) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'c',
        cluster: {
          server: `https://127.0.0.1:${port}`,
          'certificate-authority-data': Buffer.from(pki.caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: 'u', user: { token: 'bench-token' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });

const peakRss = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
/** The kernel's peak RSS of `pid` starts again from its current RSS (Linux: clear_refs 5). */
const resetPeak = (pid) => writeFileSync(`/proc/${pid}/clear_refs`, '5');

/** A server child on a stand-in host holding `n` tenant Roles: its peaks, and its memory after GC. */
async function serverMemory(n) {
  const roles = tenantRoles(n, args['forged-names']);
  const { server: host, watched, endWatches, lists, deletes } = await standIn(roles);
  const data = join(dir, `roles-${n}`);
  const kubeconfig = join(dir, `host-${n}.kubeconfig`);
  writeFileSync(kubeconfig, kubeconfigText(host.address().port));
  const first = watched();
  const child = forkServerChild(
    { ...etcdConfig, dataDir: data, certDir: join(data, 'certs'), kubeconfig },
    { execArgv: ['--expose-gc'] },
  );
  await child.ready;
  const died = child.exited.then((e) => {
    throw new Error(`the server exited (${e.oom ? 'out of memory' : (e.code ?? e.signal)})`);
  });
  died.catch(() => {});
  await Promise.race([first, died]);
  await sleep(IDLE_MS);
  if (child.exit) await died;
  const startPeak = peakRss(child.pid);
  resetPeak(child.pid);
  const before = lists.length;
  const again = watched();
  endWatches();
  await Promise.race([again, died]);
  await sleep(IDLE_MS);
  if (child.exit) await died;
  const relistPeak = peakRss(child.pid);
  const swept = deletes.count;
  const { memory } = await child.ask('gc');
  await child.stop();
  host.closeAllConnections();
  host.close();
  const relist = lists.slice(before);
  // A page asked for again from the same place was cut by the client.
  const cut = relist.filter((l, i) => i + 1 < relist.length && relist[i + 1].continue === l.continue).length;
  log(`  relist: ${relist.length} requests, limits ${relist.map((l) => l.limit || 'none').join(' ')}`);
  const row = {
    n,
    startPeak,
    relistPeak,
    requests: relist.length,
    cut,
    swept,
    rss: mib(memory.rss),
    heap: mib(memory.heapUsed),
    heapTotal: mib(memory.heapTotal),
    external: mib(memory.external),
  };
  log(`${n} tenant Roles:`, JSON.stringify(row));
  return row;
}

/** serverMemory, or what stopped the server (out of memory, say) before it was measured. */
async function measured(n) {
  try {
    return await serverMemory(n);
  } catch (err) {
    return { n, failed: String(err.message ?? err) };
  }
}

const { etcdProc, serverConfig: etcdConfig } = await startEtcd(dir);
const rows = [await measured(0), await measured(Number(args.roles))];
console.log(
  `Server: ${dist.pathname}${process.env.BENCH_SERVER_NODE_ARGS ? ` with ${process.env.BENCH_SERVER_NODE_ARGS}` : ''}\n`,
);
const what = args['forged-names'] ? ' at generated names of sources that do not exist' : '';
console.log(
  `| Tenant Roles with the server's label${what} (0.66 MiB each) | peak RSS to the first watch MiB | peak RSS of a relist MiB | lists of Roles in the relist (cut) | DELETEs of Roles (sweeps) | RSS after GC MiB | heap used after GC MiB | external after GC MiB |`,
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    r.failed
      ? `| ${r.n} | ${r.failed} | | | | | | |`
      : `| ${r.n} | ${[r.startPeak, r.relistPeak].map(f1).join(' | ')} | ${r.requests} (${r.cut}) | ${r.swept} | ${[r.rss, r.heap, r.external].map(f1).join(' | ')} |`,
  );
await etcdProc.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
