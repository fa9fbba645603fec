// What checking many Clusters and VirtualClusterInstances costs the server (issue 41): for each N of --clusters
// [100,1000], a server child (bench/server-child.mjs, its own etcd) on a stand-in that answers as the management
// host (config Secrets, one per Cluster), as N connected clusters (each its own address, token and kube-system uid,
// holding the connection Secret `vc-<name>` of one virtual cluster) and as N virtual clusters (each its own address
// and token). N Clusters are created, then N instances (one per Cluster), by the admin; the row reports the time
// until all are Initialized / Ready, then, after one interval to settle, over --steady-intervals [3] intervals: the
// server's cores, checks per object per interval (each check's GET /version as the stand-in sees it), the longest
// gap between two checks of one object, what the server asked the host and the clusters (requests, TLS handshakes),
// and the server's RSS and used heap per Cluster (with its instance) after a forced GC, against the same server
// with none. Addresses are 127.1.x.y (clusters) and 127.2.x.y (virtual clusters), all loopback on Linux.
// Usage: npm run build && node bench/cluster-health.mjs [--clusters 100,1000] [--interval 30s] [--steady-intervals 3]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  cpuSeconds,
  ctx,
  dist,
  expectStatus,
  f1,
  f2,
  forkServerChild,
  headerLines,
  httpsRequest,
  loadavg,
  log,
  machine,
  mib,
  sleep,
  startEtcd,
} from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    clusters: { type: 'string', default: '100,1000' },
    interval: { type: 'string', default: '30s' },
    'steady-intervals': { type: 'string', default: '3' },
    // A directory: the server's CPU profile of each row's steady state is written there.
    profile: { type: 'string' },
  },
});
const COUNTS = args.clusters.split(',').map(Number);
const INTERVAL_MS = parseDuration(args.interval);
const STEADY_INTERVALS = Number(args['steady-intervals']);
const GROUP = 'management.platform.sh';
const SECRETS_NS = 'platform';
const PROJECT = 'bench';
const READY_TIMEOUT_MS = 10 * 60_000;
const dir = mkdtempSync(join(tmpdir(), 'cluster-health-'));
const { ensureServingCertificate } = await import(new URL('pki/selfsigned.js', dist).href);
const pki = await ensureServingCertificate({ certDir: join(dir, 'pki'), hosts: [] });
const caData = Buffer.from(pki.caPem).toString('base64');

function parseDuration(text) {
  const m = /^(\d+)(ms|s|m)$/.exec(text);
  if (!m) throw new Error(`--interval ${text}: say 30s, 500ms or 1m`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2]];
}

const address = (block, i) => `127.${block}.${Math.floor(i / 250)}.${(i % 250) + 1}`;
const b64 = (text) => Buffer.from(text).toString('base64');

/** A kubeconfig for `server` with `token`; the stand-in's certificate is for localhost. */
const kubeconfig = (server, token) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'c', cluster: { server, 'certificate-authority-data': caData, 'tls-server-name': 'localhost' } },
    ],
    users: [{ name: 'u', user: { token } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });

/**
 * The stand-in for `n` clusters on `port` of every loopback address. What it counts: requests by who (host, each
 * cluster, each virtual cluster) and what, the times of each object's GET /version, and TLS handshakes.
 */
function standIn(n, port) {
  const uids = Array.from({ length: n }, () => randomUUID());
  const configSecret = (i) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `cluster-${i}`, namespace: SECRETS_NS, uid: uids[i], resourceVersion: String(100 + i) },
    type: 'Opaque',
    data: { config: b64(kubeconfig(`https://${address(1, i)}:${port}`, `cluster-${i}`)) },
  });
  const vcSecret = (i) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `vc-vc-${i}`, namespace: `vcluster-${i}`, uid: uids[i], resourceVersion: '7' },
    type: 'Opaque',
    data: { config: b64(kubeconfig(`https://${address(2, i)}:${port}`, `vc-${i}`)) },
  });
  const counts = { host: new Map(), clusters: new Map(), vcs: new Map(), handshakes: 0 };
  const versionTimes = { clusters: Array.from({ length: n }, () => []), vcs: Array.from({ length: n }, () => []) };
  const count = (map, what) => map.set(what, (map.get(what) ?? 0) + 1);
  const json = (res, body, code = 200) =>
    res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const notFound = (res) =>
    json(res, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }, 404);

  const server = https.createServer({ cert: pki.certPem, key: pki.keyPem, keepAliveTimeout: 120_000 }, (req, res) => {
    const url = new URL(req.url, 'https://x');
    const token = /^Bearer (.*)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const watch = url.searchParams.get('watch') === 'true';
    const [who, i] = token.startsWith('cluster-')
      ? ['clusters', Number(token.slice(8))]
      : token.startsWith('vc-')
        ? ['vcs', Number(token.slice(3))]
        : ['host', -1];
    const path = url.pathname;
    const what = `${req.method} ${path.replace(/cluster-\d+|vc-vc-\d+|vcluster-\d+/g, '<n>')}${watch ? ' (watch)' : ''}`;
    count(counts[who], what);
    if (req.method === 'POST')
      return req.resume().on('end', () => {
        if (/subjectaccessreviews$/.test(path)) return json(res, { status: { allowed: true } });
        if (/reviews$/.test(path)) return json(res, { status: {} });
        notFound(res);
      });
    if (path === '/version') {
      if (who !== 'host') versionTimes[who][i].push(performance.now());
      return json(res, { major: '1', minor: '33', gitVersion: 'v1.33.0' });
    }
    if (who === 'vcs') return notFound(res);
    if (who === 'clusters') {
      if (path === '/api/v1/namespaces/kube-system')
        return json(res, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system', uid: uids[i] } });
      if (path === `/api/v1/namespaces/vcluster-${i}/secrets/vc-vc-${i}`) return json(res, vcSecret(i));
      return notFound(res);
    }
    // The host.
    const secret = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/cluster-(\d+)$/.exec(path);
    if (secret)
      return secret[1] === SECRETS_NS && Number(secret[2]) < n
        ? json(res, configSecret(Number(secret[2])))
        : notFound(res);
    if (watch) return res.writeHead(200, { 'content-type': 'application/json' }).flushHeaders();
    if (path === `/api/v1/namespaces/${SECRETS_NS}/secrets`)
      return json(res, {
        kind: 'SecretList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '5000' },
        items: Array.from({ length: n }, (_, k) => configSecret(k)),
      });
    if (path === '/api/v1/namespaces')
      return json(res, {
        kind: 'NamespaceList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '5000' },
        items: [SECRETS_NS, `p-${PROJECT}`, 'kube-system'].map((name) => ({ metadata: { name, uid: randomUUID() } })),
      });
    const namespace = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
    if (namespace)
      return json(res, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace[1], uid: randomUUID() } });
    if (/extension-apiserver-authentication/.test(path)) return notFound(res);
    return json(res, { kind: 'List', apiVersion: 'v1', items: [], metadata: { resourceVersion: '1' } });
  });
  server.on('secureConnection', () => counts.handshakes++);
  return new Promise((resolve) => server.listen(port, '0.0.0.0', () => resolve({ server, counts, versionTimes })));
}

const freePort = () =>
  new Promise((resolve) => {
    const s = https.createServer();
    s.listen(0, '0.0.0.0', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** Runs `fn` over 0..n-1, `concurrency` at a time. */
async function pool(n, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function create(path, body) {
  const res = await httpsRequest('POST', path, { body: JSON.stringify(body) });
  expectStatus(res, 201, `POST ${path} ${body.metadata.name}`);
}

/** Polls the list at `path` until every item passes `done`, `n` of them; ms since `from`. */
async function until(path, n, done, from) {
  const deadline = performance.now() + READY_TIMEOUT_MS;
  let said = performance.now();
  for (;;) {
    const res = await httpsRequest('GET', path);
    expectStatus(res, 200, `GET ${path}`);
    const items = JSON.parse(res.body.toString()).items;
    const ready = items.filter(done).length;
    if (ready === n) return performance.now() - from;
    if (performance.now() - said > 10_000) {
      said = performance.now();
      const phases = {};
      for (const item of items) phases[item.status?.phase || '-'] = (phases[item.status?.phase || '-'] ?? 0) + 1;
      log(`  ${path}: ${JSON.stringify(phases)}`);
    }
    if (performance.now() > deadline)
      throw new Error(`${path}: ${ready} of ${n} ready after ${READY_TIMEOUT_MS / 1000} s`);
    await sleep(250);
  }
}

/** Checks per object per interval, and the longest gap (in intervals) between checks, within [t0, t1]. */
function checkStats(times, t0, t1) {
  let checks = 0;
  let longest = 0;
  for (const ts of times) {
    let last = ts.filter((t) => t < t0).at(-1) ?? t0;
    for (const t of ts.filter((t) => t >= t0 && t <= t1)) {
      checks++;
      longest = Math.max(longest, t - last);
      last = t;
    }
    longest = Math.max(longest, t1 - last);
  }
  const intervals = (t1 - t0) / INTERVAL_MS;
  return { perInterval: checks / times.length / intervals, longestGap: longest / INTERVAL_MS };
}

const snapshot = (counts) => ({
  host: new Map(counts.host),
  clusters: new Map(counts.clusters),
  vcs: new Map(counts.vcs),
  handshakes: counts.handshakes,
});
/** What the server asked during the window, per object per interval: "GET /version 1.00, ...". */
function asked(before, after, n, intervals) {
  const out = {};
  for (const who of ['host', 'clusters', 'vcs']) {
    const parts = [];
    for (const [what, c] of after[who]) {
      const d = c - (before[who].get(what) ?? 0);
      if (d) parts.push(`${what} ${f2(d / n / intervals)}`);
    }
    out[who] = parts.join('; ') || 'nothing';
  }
  out.handshakes = (after.handshakes - before.handshakes) / n / intervals;
  return out;
}

async function row(n, etcdConfig) {
  const port = await freePort();
  const stand = await standIn(n, port);
  const hostKubeconfig = join(dir, `host-${n}.kubeconfig`);
  writeFileSync(hostKubeconfig, kubeconfig(`https://127.0.0.1:${port}`, 'host'));
  const data = join(dir, `server-${n}`);
  const child = forkServerChild(
    {
      ...etcdConfig,
      etcdPrefix: `/bench-${n}`,
      dataDir: data,
      certDir: join(data, 'certs'),
      kubeconfig: hostKubeconfig,
      clusterSecretNamespace: SECRETS_NS,
      // As the chart's rbac.watchClusterSecrets runs it (ignored by a server before the flag).
      watchClusterSecrets: true,
      clusterHealthIntervalMs: INTERVAL_MS,
      virtualClusterHealthIntervalMs: INTERVAL_MS,
    },
    { execArgv: ['--expose-gc'] },
  );
  ctx.server = await child.ready;
  await sleep(5_000);
  const idle = (await child.ask('gc')).memory;
  log(`N=${n}: idle RSS ${f1(mib(idle.rss))} MiB; creating ${n} Clusters`);

  await create(`/apis/${GROUP}/v1/projects`, {
    apiVersion: `${GROUP}/v1`,
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: { owner: { user: 'admin' }, allowedClusters: [{ name: '*' }] },
  });
  const t0 = performance.now();
  await pool(n, 16, (i) =>
    create(`/apis/${GROUP}/v1/clusters`, {
      apiVersion: `${GROUP}/v1`,
      kind: 'Cluster',
      metadata: { name: `cluster-${i}` },
      spec: { config: { secretName: `cluster-${i}` } },
    }),
  );
  const initialized = await until(`/apis/${GROUP}/v1/clusters`, n, (c) => c.status?.phase === 'Initialized', t0);
  log(`N=${n}: all Initialized ${f1(initialized / 1000)} s after the first create; creating ${n} instances`);
  const vcis = `/apis/${GROUP}/v1/namespaces/p-${PROJECT}/virtualclusterinstances`;
  const t1 = performance.now();
  await pool(n, 16, (i) =>
    create(vcis, {
      apiVersion: `${GROUP}/v1`,
      kind: 'VirtualClusterInstance',
      metadata: { name: `vc-${i}` },
      spec: {
        owner: { user: 'admin' },
        clusterRef: { cluster: `cluster-${i}`, namespace: `vcluster-${i}`, virtualCluster: `vc-${i}` },
      },
    }),
  );
  const ready = await until(vcis, n, (v) => v.status?.phase === 'Ready', t1);
  log(`N=${n}: all Ready ${f1(ready / 1000)} s after the first create; settling for one interval`);
  await sleep(INTERVAL_MS);

  const before = snapshot(stand.counts);
  const cpu0 = cpuSeconds(ctx.server.pid);
  const w0 = performance.now();
  log(`N=${n}: steady state for ${STEADY_INTERVALS} intervals`);
  if (args.profile) await child.ask({ type: 'profile', action: 'start' });
  await sleep(STEADY_INTERVALS * INTERVAL_MS);
  if (args.profile)
    await child.ask({ type: 'profile', action: 'stop', file: join(args.profile, `steady-${n}.cpuprofile`) });
  const w1 = performance.now();
  const cores = (cpuSeconds(ctx.server.pid) - cpu0) / ((w1 - w0) / 1000);
  const requests = asked(before, snapshot(stand.counts), n, STEADY_INTERVALS);
  const clusters = checkStats(stand.versionTimes.clusters, w0, w1);
  const instances = checkStats(stand.versionTimes.vcs, w0, w1);
  const full = (await child.ask('gc')).memory;
  await child.stop();
  stand.server.closeAllConnections();
  stand.server.close();
  const result = {
    n,
    initialized,
    ready,
    cores,
    clusters,
    instances,
    requests,
    rssPerCluster: (full.rss - idle.rss) / n,
    heapPerCluster: (full.heapUsed - idle.heapUsed) / n,
    externalPerCluster: (full.external - idle.external) / n,
    idleRss: idle.rss,
  };
  log(`N=${n}:`, JSON.stringify(result));
  return result;
}

const m = machine();
const { etcdProc, serverConfig: etcdConfig } = await startEtcd(dir);
const rows = [];
try {
  for (const n of COUNTS) rows.push(await row(n, etcdConfig));
} finally {
  await etcdProc.stop();
  rmSync(dir, { recursive: true, force: true });
}

const kib = (bytes) => f1(bytes / 1024);
const lines = [
  ...headerLines(m, loadavg(), `Interval ${INTERVAL_MS / 1000} s; steady state over ${STEADY_INTERVALS} intervals.`),
  '| N clusters + N instances | all Initialized s | all Ready s | server cores, steady | checks per interval (clusters / instances) | longest gap, intervals (clusters / instances) | RSS KiB per cluster | heap KiB per cluster | external KiB per cluster |',
  '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.n} | ${f1(r.initialized / 1000)} | ${f1(r.ready / 1000)} | ${f2(r.cores)} | ${f2(r.clusters.perInterval)} / ${f2(r.instances.perInterval)} | ${f2(r.clusters.longestGap)} / ${f2(r.instances.longestGap)} | ${kib(r.rssPerCluster)} | ${kib(r.heapPerCluster)} | ${kib(r.externalPerCluster)} |`,
  ),
  '',
  'What the server asked, per object per interval, in steady state:',
  '',
  ...rows.flatMap((r) => [
    `- N=${r.n}: the host: ${r.requests.host}`,
    `  - each cluster: ${r.requests.clusters}`,
    `  - each virtual cluster: ${r.requests.vcs}`,
    `  - TLS handshakes per Cluster (its cluster and its virtual cluster together) per interval: ${f2(r.requests.handshakes)}`,
  ]),
];
console.log(lines.join('\n'));
process.exit(0);
