// What delivering ProjectSecrets to many targets costs (issue 42): for each row PxT of --rows [1x100,100x16], a server
// child (bench/server-child.mjs, its own etcd prefix) on a stand-in in this process that answers as the management
// host, as --clusters [4] connected clusters (each its own loopback address 127.1.0.x, token and kube-system uid) and
// as T - clusters virtual clusters (127.2.x.y, each its own token; virtual cluster j runs in connected cluster
// j % clusters, its connection Secret `vc-vc-<j>` there). One SharedSecret (owned by bob, a tenant: not
// system:masters, so every check the server asks of a cluster is asked) and P ProjectSecrets of bob's synced from it,
// each delivered to `virtualCluster: {name: '*'}` (every instance of the project) and to every connected cluster.
// Each row reports, with the stand-in's own counts (requests by who and what) and the server's CPU (/proc):
//   1. the first delivery: from the first ProjectSecret's create until every target holds every Secret;
//   2. a rotation (one merge patch of the SharedSecret's data) fanned out: for each (ProjectSecret, target), the time
//      from the patch's answer until the stand-in stored the new value; against a raw client that PUTs the same
//      Secrets itself at the server's own concurrency (8 targets of a ProjectSecret at once, 4 ProjectSecrets at once);
//   3. the steady state, nothing changing, for --steady [30s] with --resync [15s] (the server's
//      --access-resync-period), against the same server before any ProjectSecret;
//   4. one virtual cluster down (every request 503): a rotation, the requests to it and to the others for
//      --down [30s], then the time until it has the value once it is back.
// The virtual clusters' own health checks are off (they are not what is measured); the Clusters' run every 30 s.
// Usage: npm run build && node bench/projectsecret-delivery.mjs [--rows 1x100,100x16] [--clusters 4] [--steady 30s]
//        [--resync 15s] [--down 30s] [--profile DIR]      e.g. --rows 1x256,500x16 for a bigger run
import { execFileSync } from 'node:child_process';
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
  sleep,
  startEtcd,
  summary,
} from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '1x100,100x16' },
    clusters: { type: 'string', default: '4' },
    steady: { type: 'string', default: '30s' },
    resync: { type: 'string', default: '15s' },
    down: { type: 'string', default: '30s' },
    // A directory: the server's CPU profile of each row's rotation and steady state is written there.
    profile: { type: 'string' },
  },
});
const ROWS = args.rows.split(',').map((r) => {
  const [p, t] = r.split('x').map(Number);
  return { p, t };
});
const CLUSTERS = Number(args.clusters);
const STEADY_MS = parseDuration(args.steady);
const RESYNC_MS = parseDuration(args.resync);
const DOWN_MS = parseDuration(args.down);
const GROUP = 'management.platform.sh';
const V1 = `/apis/${GROUP}/v1`;
const SECRETS_NS = 'platform';
const PROJECT = 'bench';
const PROJECT_NS = `p-${PROJECT}`;
const SOURCE_NS = 'shared';
const VC_NS = 'default';
const APPS = 'apps';
const TIMEOUT_MS = 10 * 60_000;
const HEALTH_INTERVAL_MS = 30_000;
const dir = mkdtempSync(join(tmpdir(), 'projectsecret-delivery-'));
const { ensureServingCertificate } = await import(new URL('pki/selfsigned.js', dist).href);
const pki = await ensureServingCertificate({ certDir: join(dir, 'pki'), hosts: [] });
const caData = Buffer.from(pki.caPem).toString('base64');

function parseDuration(text) {
  const m = /^(\d+)(ms|s|m)$/.exec(text);
  if (!m) throw new Error(`${text}: say 30s, 500ms or 1m`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2]];
}

const address = (block, i) => `127.${block}.${Math.floor(i / 250)}.${(i % 250) + 1}`;
const b64 = (text) => Buffer.from(text).toString('base64');
const unb64 = (text) => Buffer.from(text ?? '', 'base64').toString('utf8');

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

// ---------- the stand-in ----------

/**
 * One in-memory API per token: `host`, `cluster-<i>`, `vc-<j>`. Each stores what is written to it (any resource, by
 * path: POST, GET, PUT at the resourceVersion read, PATCH as a shallow merge, DELETE with a uid precondition), lists
 * and watches any collection (label selectors of `k=v` and `k` terms; a watch sends what is written from then on, as
 * metadata only when asked so), answers every SubjectAccessReview allowed, /version, and 503 to everything while
 * `down`. Counted per API: requests by what, and when each Secret first held each value of its key `token`.
 */
function standIn(port) {
  let rv = 1000;
  const apis = new Map();
  const api = (who) => {
    let a = apis.get(who);
    if (!a) apis.set(who, (a = { objects: new Map(), watchers: new Set(), counts: new Map(), down: false }));
    return a;
  };
  const count = (a, what) => a.counts.set(what, (a.counts.get(what) ?? 0) + 1);
  /** `${who} ${namespace}/${name}` -> Map(token value -> ms). */
  const held = new Map();
  const json = (res, body, code = 200) =>
    res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const status = (res, code, reason, message = reason) =>
    json(res, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code }, code);

  /** A path as { prefix, namespace, resource, name, sub } (kube's layout), or undefined. */
  function parse(path) {
    const m = /^\/(api\/v1|apis\/[^/]+\/[^/]+)(\/.*)?$/.exec(path);
    if (!m) return undefined;
    const seg = (m[2] ?? '').split('/').filter(Boolean);
    let namespace = '';
    let rest = seg;
    if (seg[0] === 'namespaces' && seg.length >= 3) [namespace, rest] = [seg[1], seg.slice(2)];
    return { prefix: m[1], namespace, resource: rest[0], name: rest[1], sub: rest[2] };
  }
  const keyOf = (p, namespace, name) => `${p.prefix}|${p.resource}|${namespace}|${name}`;
  const matches = (obj, selector) =>
    !selector ||
    selector.split(',').every((term) => {
      const [k, v] = term.split('=');
      const labels = obj.metadata?.labels ?? {};
      return v === undefined ? k in labels : labels[k] === v;
    });
  function put(who, a, p, obj, type) {
    const key = keyOf(p, obj.metadata.namespace ?? '', obj.metadata.name);
    if (type === 'DELETED') a.objects.delete(key);
    else a.objects.set(key, obj);
    if (p.resource === 'secrets' && type !== 'DELETED' && obj.data?.token !== undefined) {
      const where = `${who} ${obj.metadata.namespace}/${obj.metadata.name}`;
      let m = held.get(where);
      if (!m) held.set(where, (m = new Map()));
      const value = unb64(obj.data.token);
      if (!m.has(value)) m.set(value, performance.now());
    }
    for (const w of a.watchers)
      if (
        w.prefix === p.prefix &&
        w.resource === p.resource &&
        (!w.namespace || w.namespace === obj.metadata.namespace) &&
        matches(obj, w.selector)
      )
        w.res.write(
          `${JSON.stringify({ type, object: w.metadataOnly ? { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata } : obj })}\n`,
        );
  }
  const seed = (who, path, obj) => {
    const p = parse(path);
    const a = api(who);
    obj.metadata.resourceVersion ??= String(++rv);
    obj.metadata.uid ??= randomUUID();
    a.objects.set(keyOf(p, obj.metadata.namespace ?? '', obj.metadata.name), obj);
  };

  function handle(req, res, body) {
    const url = new URL(req.url, 'https://x');
    const who = /^Bearer (.*)$/.exec(req.headers.authorization ?? '')?.[1] ?? 'anonymous';
    const a = api(who);
    const path = url.pathname;
    const watch = url.searchParams.get('watch') === 'true';
    const p = parse(path);
    const kind = p?.resource === 'secrets' ? 'Secret' : (p?.resource ?? path);
    // What for, where it tells: a virtual cluster's connection Secret (vc-vc-<j>) and the review of its importer's
    // hold of it are what the server asks a connected cluster before each delivery into that virtual cluster.
    const connection = /vc-vc-\d+/.test(path) || (/reviews$/.test(path) && /vc-vc-\d+/.test(body));
    const empty =
      p?.resource === 'secrets' &&
      (req.method === 'POST' || req.method === 'PUT') &&
      !Object.keys(JSON.parse(body).data ?? {}).length;
    const what = !p
      ? `${req.method} ${path}`
      : /reviews$/.test(path)
        ? `POST ${p.resource}${connection ? ' (importer holds vc-<j>)' : ''}`
        : `${watch ? 'WATCH' : req.method === 'GET' && !p.name ? 'LIST' : req.method} ${kind}${p.namespace || p.name ? '' : ' (all namespaces)'}${connection ? ' vc-<j> (connection)' : ''}${empty ? ' (no data)' : ''}`;
    count(a, what);
    if (a.down) return status(res, 503, 'ServiceUnavailable');
    if (path === '/version') return json(res, { major: '1', minor: '33', gitVersion: 'v1.33.0' });
    if (!p) return status(res, 404, 'NotFound');
    if (req.method === 'POST' && /subjectaccessreviews$/.test(path))
      return json(res, { ...JSON.parse(body), status: { allowed: true } }, 201);
    if (req.method === 'POST' && /reviews$/.test(path)) return json(res, { ...JSON.parse(body), status: {} }, 201);
    const selector = url.searchParams.get('labelSelector') ?? '';
    if (req.method === 'GET' && !p.name) {
      if (watch) {
        const w = {
          ...p,
          selector,
          res,
          metadataOnly: /PartialObjectMetadata/.test(req.headers.accept ?? ''),
        };
        a.watchers.add(w);
        res.on('close', () => a.watchers.delete(w));
        return res.writeHead(200, { 'content-type': 'application/json' }).flushHeaders();
      }
      const items = [];
      for (const obj of a.objects.values())
        if (
          keyOf(p, obj.metadata.namespace ?? '', obj.metadata.name).startsWith(`${p.prefix}|${p.resource}|`) &&
          (!p.namespace || obj.metadata.namespace === p.namespace) &&
          matches(obj, selector)
        )
          items.push(obj);
      return json(res, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items });
    }
    const namespace = p.namespace;
    if (req.method === 'POST' && !p.name) {
      const obj = JSON.parse(body);
      const key = keyOf(p, namespace, obj.metadata.name);
      if (a.objects.has(key)) return status(res, 409, 'AlreadyExists');
      obj.metadata = {
        ...obj.metadata,
        namespace: namespace || undefined,
        uid: randomUUID(),
        resourceVersion: String(++rv),
        creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      };
      put(who, a, p, obj, 'ADDED');
      return json(res, obj, 201);
    }
    const key = keyOf(p, namespace, p.name);
    const have = a.objects.get(key);
    if (req.method === 'GET') {
      if (have) return json(res, have);
      if (p.resource === 'namespaces' || (!p.namespace && p.resource === 'namespaces'))
        return json(res, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: p.name, uid: randomUUID() } });
      return status(res, 404, 'NotFound');
    }
    if (!have) return status(res, 404, 'NotFound');
    if (req.method === 'PUT') {
      const obj = JSON.parse(body);
      if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== have.metadata.resourceVersion)
        return status(res, 409, 'Conflict');
      obj.metadata = { ...obj.metadata, uid: have.metadata.uid, resourceVersion: String(++rv) };
      put(who, a, p, obj, 'MODIFIED');
      return json(res, obj);
    }
    if (req.method === 'PATCH') {
      const patch = JSON.parse(body || '{}');
      const obj = {
        ...have,
        ...patch,
        metadata: { ...have.metadata, ...patch.metadata, resourceVersion: String(++rv) },
      };
      put(who, a, p, obj, 'MODIFIED');
      return json(res, obj);
    }
    if (req.method === 'DELETE') {
      const uid = body ? JSON.parse(body).preconditions?.uid : undefined;
      if (uid && uid !== have.metadata.uid) return status(res, 409, 'Conflict');
      put(who, a, p, have, 'DELETED');
      return json(res, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
    }
    return status(res, 405, 'MethodNotAllowed');
  }

  const server = https.createServer({ cert: pki.certPem, key: pki.keyPem, keepAliveTimeout: 120_000 }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString()));
  });
  return new Promise((resolve) =>
    server.listen(port, '0.0.0.0', () => resolve({ server, apis, api, held, seed, counts: () => snapshot(apis) })),
  );
}

/** Requests so far, by who and what. */
const snapshot = (apis) => new Map([...apis].map(([who, a]) => [who, new Map(a.counts)]));
/** Requests between two snapshots, for the APIs `pick` takes: { total, byWhat: Map }. */
function between(before, after, pick) {
  const byWhat = new Map();
  let total = 0;
  for (const [who, counts] of after) {
    if (!pick(who)) continue;
    for (const [what, c] of counts) {
      const d = c - (before.get(who)?.get(what) ?? 0);
      if (!d) continue;
      byWhat.set(what, (byWhat.get(what) ?? 0) + d);
      total += d;
    }
  }
  return { total, byWhat };
}
const perTarget = (r, n) =>
  [...r.byWhat]
    .sort((x, y) => y[1] - x[1])
    .map(([what, c]) => `${what} ${f2(c / n)}`)
    .join('; ') || 'nothing';
/** A connected cluster's requests: those for a virtual cluster running there per copy in a virtual cluster, the others per copy in a connected cluster. */
const perClusterTarget = (r, vcCopies, clusterCopies) =>
  [...r.byWhat]
    .sort((x, y) => y[1] - x[1])
    .map(([what, c]) => `${what} ${f2(c / (/vc-<j>/.test(what) ? vcCopies : clusterCopies))}`)
    .join('; ') || 'nothing';
const isVc = (who) => who.startsWith('vc-');
const isCluster = (who) => who.startsWith('cluster-');

const freePort = () =>
  new Promise((resolve) => {
    const s = https.createServer();
    s.listen(0, '0.0.0.0', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function pool(n, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function create(path, body, token) {
  const res = await httpsRequest('POST', path, { body: JSON.stringify(body), token });
  expectStatus(res, 201, `POST ${path} ${body.metadata.name}`);
  return JSON.parse(res.body.toString());
}

async function until(what, check, timeoutMs = TIMEOUT_MS, everyMs = 100) {
  const deadline = performance.now() + timeoutMs;
  let said = performance.now();
  for (;;) {
    const r = await check();
    if (r.done) return;
    if (performance.now() - said > 10_000) {
      said = performance.now();
      log(`  waiting for ${what}: ${r.progress}`);
    }
    if (performance.now() > deadline) throw new Error(`${what}: not after ${timeoutMs / 1000} s (${r.progress})`);
    await sleep(everyMs);
  }
}

/** CPU seconds of the server, etcd and this process (the stand-in and the client) around `fn`, as cores. */
async function cores(fn, etcdPid) {
  const c0 = [cpuSeconds(ctx.server.pid), cpuSeconds(etcdPid), cpuSeconds(process.pid)];
  const t0 = performance.now();
  const result = await fn();
  const wall = (performance.now() - t0) / 1000;
  const c1 = [cpuSeconds(ctx.server.pid), cpuSeconds(etcdPid), cpuSeconds(process.pid)];
  return {
    result,
    wall,
    server: (c1[0] - c0[0]) / wall,
    serverSeconds: c1[0] - c0[0],
    etcd: (c1[1] - c0[1]) / wall,
    bench: (c1[2] - c0[2]) / wall,
  };
}

async function profiled(child, file, fn) {
  if (args.profile) await child.ask({ type: 'profile', action: 'start' });
  const r = await fn();
  if (args.profile) await child.ask({ type: 'profile', action: 'stop', file: join(args.profile, file) });
  return r;
}

async function row({ p: P, t: T }, etcdConfig, etcdPid) {
  const V = T - CLUSTERS;
  if (V < 1) throw new Error(`row ${P}x${T}: a row needs more targets than --clusters ${CLUSTERS}`);
  const label = `${P}x${T}`;
  const port = await freePort();
  const stand = await standIn(port);
  const clusterUids = Array.from({ length: CLUSTERS }, () => randomUUID());
  for (const ns of [SECRETS_NS, PROJECT_NS, SOURCE_NS, 'kube-system', 'default'])
    stand.seed('host', `/api/v1/namespaces/${ns}`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  for (let i = 0; i < CLUSTERS; i++) {
    stand.seed('host', `/api/v1/namespaces/${SECRETS_NS}/secrets/cluster-${i}`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `cluster-${i}`, namespace: SECRETS_NS },
      type: 'Opaque',
      data: { config: b64(kubeconfig(`https://${address(1, i)}:${port}`, `cluster-${i}`)) },
    });
    stand.seed(`cluster-${i}`, '/api/v1/namespaces/kube-system', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'kube-system', uid: clusterUids[i] },
    });
  }
  for (let j = 0; j < V; j++)
    stand.seed(`cluster-${j % CLUSTERS}`, `/api/v1/namespaces/vcluster-${j}/secrets/vc-vc-${j}`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `vc-vc-${j}`, namespace: `vcluster-${j}` },
      type: 'Opaque',
      data: { config: b64(kubeconfig(`https://${address(2, j)}:${port}`, `vc-${j}`)) },
    });
  const hostKubeconfig = join(dir, `host-${label}.kubeconfig`);
  writeFileSync(hostKubeconfig, kubeconfig(`https://127.0.0.1:${port}`, 'host'));
  const rootToken = `root-${randomUUID()}`;
  const bobToken = `bob-${randomUUID()}`;
  const tokenFile = join(dir, `tokens-${label}.csv`);
  writeFileSync(tokenFile, `${rootToken},root,uid-root,"system:masters"\n${bobToken},bob,uid-bob,"devs"\n`, {
    mode: 0o600,
  });
  const data = join(dir, `server-${label}`);
  const child = forkServerChild({
    ...etcdConfig,
    etcdPrefix: `/bench-${label}`,
    dataDir: data,
    certDir: join(data, 'certs'),
    kubeconfig: hostKubeconfig,
    tokenAuthFile: tokenFile,
    clusterSecretNamespace: SECRETS_NS,
    watchClusterSecrets: true,
    clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
    virtualClusterHealthIntervalMs: 0,
    projectSecretDelivery: true,
    accessResyncPeriodMs: RESYNC_MS,
  });
  ctx.server = { ...(await child.ready), token: rootToken };
  log(`${label}: server up; ${CLUSTERS} Clusters, ${V} virtual clusters`);

  await create(`${V1}/projects`, {
    apiVersion: `${GROUP}/v1`,
    kind: 'Project',
    metadata: { name: PROJECT },
    spec: { owner: { user: 'bob' }, allowedClusters: [{ name: '*' }] },
  });
  await pool(CLUSTERS, 16, (i) =>
    create(`${V1}/clusters`, {
      apiVersion: `${GROUP}/v1`,
      kind: 'Cluster',
      metadata: { name: `cluster-${i}` },
      spec: { config: { secretName: `cluster-${i}` }, access: [{ verbs: ['get'], users: ['bob'] }] },
    }),
  );
  await until('Clusters Initialized', async () => {
    const res = await httpsRequest('GET', `${V1}/clusters`);
    const items = JSON.parse(res.body.toString()).items;
    const n = items.filter((c) => c.status?.phase === 'Initialized').length;
    return { done: n === CLUSTERS, progress: `${n} of ${CLUSTERS}` };
  });
  // bob's instances, created by him (he is their importer: the server asks his hold of each before a delivery).
  await pool(V, 16, (j) =>
    create(
      `${V1}/namespaces/${PROJECT_NS}/virtualclusterinstances`,
      {
        apiVersion: `${GROUP}/v1`,
        kind: 'VirtualClusterInstance',
        metadata: { name: `vc-${j}` },
        spec: {
          owner: { user: 'bob' },
          clusterRef: { cluster: `cluster-${j % CLUSTERS}`, namespace: `vcluster-${j}`, virtualCluster: `vc-${j}` },
        },
      },
      bobToken,
    ),
  );
  await sleep(3000);

  // ---- steady state before any ProjectSecret ----
  log(`${label}: steady state without ProjectSecrets, ${STEADY_MS / 1000} s`);
  let s0 = stand.counts();
  const idle = await cores(() => sleep(STEADY_MS), etcdPid);
  const idleReq = between(s0, stand.counts(), () => true);

  // ---- 1. first delivery ----
  const source = `source-${label}`;
  await create(`${V1}/namespaces/${SOURCE_NS}/sharedsecrets`, {
    apiVersion: `${GROUP}/v1`,
    kind: 'SharedSecret',
    metadata: { name: source },
    spec: { owner: { user: 'bob' }, data: { token: b64('v1') } },
  });
  const targets = [
    { virtualCluster: { name: '*', namespace: VC_NS } },
    ...Array.from({ length: CLUSTERS }, (_, i) => ({ cluster: { name: `cluster-${i}`, namespace: APPS } })),
  ];
  const psName = (k) => `ps-${String(k).padStart(4, '0')}`;
  /** Every place a copy goes: [who, namespace/name]. */
  const places = [];
  for (let k = 0; k < P; k++) {
    for (let j = 0; j < V; j++) places.push(`vc-${j} ${VC_NS}/${psName(k)}`);
    for (let i = 0; i < CLUSTERS; i++) places.push(`cluster-${i} ${APPS}/${psName(k)}`);
  }
  const heldCount = (value) => places.filter((w) => stand.held.get(w)?.has(value)).length;
  /** Per place, ms from `t0` until it held `value`. */
  const delays = (value, t0, pick = () => true) =>
    places.filter(pick).map((w) => (stand.held.get(w)?.get(value) ?? NaN) - t0);
  const linesDelivered = async () => {
    const res = await httpsRequest('GET', `${V1}/namespaces/${PROJECT_NS}/projectsecrets`);
    const items = JSON.parse(res.body.toString()).items;
    let n = 0;
    for (const ps of items) n += (ps.status?.targets ?? []).filter((l) => l.phase === 'Delivered').length;
    return n;
  };
  log(`${label}: creating ${P} ProjectSecrets, each to ${T} targets (${P * T} copies)`);
  s0 = stand.counts();
  const t0 = performance.now();
  let allHeld = NaN;
  const first = await cores(async () => {
    await pool(P, 16, (k) =>
      create(
        `${V1}/namespaces/${PROJECT_NS}/projectsecrets`,
        {
          apiVersion: `${GROUP}/v1`,
          kind: 'ProjectSecret',
          metadata: { name: psName(k) },
          spec: {
            owner: { user: 'bob' },
            sharedSecretRef: { namespace: SOURCE_NS, name: source },
            delivery: { targets },
          },
        },
        bobToken,
      ),
    );
    await until('every copy', () => {
      const n = heldCount('v1');
      return { done: n === places.length, progress: `${n} of ${places.length}` };
    });
    allHeld = performance.now() - t0;
    await until(
      'every line Delivered',
      async () => {
        const n = await linesDelivered();
        return { done: n === places.length, progress: `${n} of ${places.length} lines` };
      },
      TIMEOUT_MS,
      1000,
    );
  }, etcdPid);
  const allLines = performance.now() - t0;
  const firstReq = snapshotRequests(s0, stand.counts());
  log(`${label}: first delivery: every copy ${f1(allHeld / 1000)} s, every line ${f1(allLines / 1000)} s`);
  await sleep(2000);

  // ---- 2. a rotation ----
  const rotate = async (value) => {
    const res = await httpsRequest('PATCH', `${V1}/namespaces/${SOURCE_NS}/sharedsecrets/${source}`, {
      body: JSON.stringify({ spec: { data: { token: b64(value) } } }),
      contentType: 'application/merge-patch+json',
    });
    expectStatus(res, 200, 'rotate');
    return performance.now();
  };
  log(`${label}: rotation`);
  s0 = stand.counts();
  let r0;
  const rotation = await profiled(child, `${label}-rotation.cpuprofile`, () =>
    cores(async () => {
      r0 = await rotate('v2');
      await until('the rotation everywhere', () => {
        const n = heldCount('v2');
        return { done: n === places.length, progress: `${n} of ${places.length}` };
      });
    }, etcdPid),
  );
  const rotationReq = snapshotRequests(s0, stand.counts());
  const rotationDelays = summary(delays('v2', r0));
  log(`${label}: rotation: p50 ${f1(rotationDelays.p50)} ms p99 ${f1(rotationDelays.p99)} ms`);

  // The raw client: the same Secrets (under other names) PUT by this process, 8 targets of one at once, 4 at once.
  const agents = new Map();
  const rawWrite = (w, value, method) => {
    const [who, place] = w.split(' ');
    const [ns, name] = place.split('/');
    const host = who.startsWith('vc-') ? address(2, Number(who.slice(3))) : address(1, Number(who.slice(8)));
    let agent = agents.get(who);
    if (!agent) agents.set(who, (agent = new https.Agent({ keepAlive: true, ca: pki.caPem, servername: 'localhost' })));
    const body = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `raw-${name}`, namespace: ns, ...(method === 'PUT' ? { resourceVersion: undefined } : {}) },
      type: 'Opaque',
      data: { token: b64(value) },
    });
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host,
          port,
          method,
          path: `/api/v1/namespaces/${ns}/secrets${method === 'PUT' ? `/raw-${name}` : ''}`,
          agent,
          headers: { authorization: `Bearer ${who}`, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode < 300 ? resolve() : reject(new Error(`raw ${method}: ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  };
  const rawRound = async (value, method) => {
    const t = performance.now();
    const perPs = V + CLUSTERS;
    await pool(P, 4, (k) => pool(perPs, 8, (i) => rawWrite(places[k * perPs + i], value, method)));
    return performance.now() - t;
  };
  await rawRound('v1', 'POST'); // creates the Secrets, opens the connections
  const raw = await cores(() => rawRound('v2', 'PUT'), etcdPid);
  for (const a of agents.values()) a.destroy();
  log(`${label}: raw client PUTs: ${f1(raw.result)} ms`);
  await sleep(2000);

  // ---- 3. steady state ----
  log(`${label}: steady state with ${P} ProjectSecrets, ${STEADY_MS / 1000} s (resync every ${RESYNC_MS / 1000} s)`);
  const steadyFrom = stand.counts();
  const steady = await profiled(child, `${label}-steady.cpuprofile`, () => cores(() => sleep(STEADY_MS), etcdPid));
  const steadyTo = stand.counts();
  const steadyReq = snapshotRequests(steadyFrom, steadyTo);
  const steadyAll = between(steadyFrom, steadyTo, () => true);

  // ---- 4. one virtual cluster down ----
  log(`${label}: vc-0 down; rotation; ${DOWN_MS / 1000} s`);
  const down = stand.api('vc-0');
  down.down = true;
  s0 = stand.counts();
  const d0 = await rotate('v3');
  const othersPick = (w) => !w.startsWith('vc-0 ');
  await until('the rotation everywhere but vc-0', () => {
    const n = places.filter((w) => othersPick(w) && stand.held.get(w)?.has('v3')).length;
    const want = places.filter(othersPick).length;
    return { done: n === want, progress: `${n} of ${want}` };
  });
  const othersDone = performance.now() - d0;
  const sOthers = stand.counts();
  const downWindow = await cores(() => sleep(Math.max(0, DOWN_MS - othersDone)), etcdPid);
  const s1 = stand.counts();
  const toDown = between(s0, s1, (who) => who === 'vc-0');
  const toOthersAfter = between(sOthers, s1, (who) => who !== 'vc-0');
  const toOthersAfterVcs = between(sOthers, s1, (who) => isVc(who) && who !== 'vc-0');
  const toClustersAfter = between(sOthers, s1, isCluster);
  const toHostAfter = between(sOthers, s1, (who) => who === 'host');
  // How many full passes over the ProjectSecrets (resyncs) ran meanwhile: each asks every virtual cluster one review
  // per ProjectSecret.
  const passes = (b, a) => (between(b, a, (who) => who === 'vc-1').byWhat.get('POST subjectaccessreviews') ?? 0) / P;
  const downPasses = passes(sOthers, s1);
  const steadyPasses = passes(steadyFrom, steadyTo);
  down.down = false;
  const u0 = performance.now();
  await until('vc-0 back', () => {
    const n = places.filter((w) => w.startsWith('vc-0 ') && stand.held.get(w)?.has('v3')).length;
    return { done: n === P, progress: `${n} of ${P}` };
  });
  const recovered = performance.now() - u0;
  log(`${label}: vc-0 has the value ${f1(recovered / 1000)} s after it is back`);

  await child.stop();
  stand.server.closeAllConnections();
  stand.server.close();
  return {
    label,
    P,
    T,
    V,
    copies: P * T,
    idle: { ...idle, requests: idleReq.total },
    first: { ...first, allHeld, allLines, req: firstReq },
    rotation: { ...rotation, delays: rotationDelays, req: rotationReq },
    raw: { ...raw, ms: raw.result },
    steady: { ...steady, req: steadyReq, total: steadyAll.total, resyncs: steadyPasses },
    down: {
      othersDone,
      windowSeconds: (s1 === s0 ? 0 : DOWN_MS) / 1000,
      toDown,
      toOthersAfter,
      toOthersAfterVcs,
      toClustersAfter,
      toHostAfter,
      passes: downPasses,
      // What the others would have been asked by that many passes of the steady state.
      expectedOthers: steadyPasses ? (steadyAll.total * downPasses) / steadyPasses : NaN,
      afterSeconds: downWindow.wall,
      serverAfter: downWindow.server,
      recovered,
    },
  };

  function snapshotRequests(before, after) {
    return {
      vcs: between(before, after, isVc),
      clusters: between(before, after, isCluster),
      host: between(before, after, (who) => who === 'host'),
    };
  }
}

const m = machine();
let commit = process.env.BENCH_SOURCE;
if (!commit)
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src']).toString().split('\n').filter(Boolean);
    commit = `commit ${head}, ${dirty.length} uncommitted change(s) under src/, built into ${dist.pathname}`;
    process.env.BENCH_SOURCE = commit;
  } catch {
    // not a git checkout: the header names dist/
  }
const { etcdProc, serverConfig: etcdConfig } = await startEtcd(dir);
const rows = [];
try {
  for (const r of ROWS) rows.push(await row(r, etcdConfig, etcdProc.pid));
} finally {
  await etcdProc.stop();
  rmSync(dir, { recursive: true, force: true });
}

const s = (ms) => f2(ms / 1000);
const lines = [
  ...headerLines(
    m,
    loadavg(),
    `${CLUSTERS} connected clusters per row (the other targets virtual clusters); resync ${RESYNC_MS / 1000} s; steady state ${STEADY_MS / 1000} s; one target down ${DOWN_MS / 1000} s.`,
  ),
  '#### Delivery and rotation (P ProjectSecrets x T targets; times in seconds)',
  '',
  '| P x T | copies | first delivery: every copy / every line | server cores | rotation: p50 / p99 / max to a copy | server CPU s | raw client PUTs | rotation max / raw |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.label} | ${r.copies} | ${s(r.first.allHeld)} / ${s(r.first.allLines)} | ${f2(r.first.server)} | ${s(r.rotation.delays.p50)} / ${s(r.rotation.delays.p99)} / ${s(r.rotation.delays.max)} | ${f2(r.rotation.serverSeconds)} | ${s(r.raw.ms)} | ${f1(r.rotation.delays.max / r.raw.ms)}x |`,
  ),
  '',
  'Requests per copy (one ProjectSecret at one target), by API:',
  '',
  ...rows.flatMap((r) => [
    `- ${r.label}, first delivery: virtual clusters: ${perTarget(r.first.req.vcs, r.P * r.V)}`,
    `  - connected clusters, per copy (in a virtual cluster for vc-<j>, else in a connected cluster): ${perClusterTarget(r.first.req.clusters, r.P * r.V, r.P * CLUSTERS)}`,
    `  - the host, per copy: ${perTarget(r.first.req.host, r.copies)}`,
    `- ${r.label}, rotation: virtual clusters: ${perTarget(r.rotation.req.vcs, r.P * r.V)}`,
    `  - connected clusters, per copy: ${perClusterTarget(r.rotation.req.clusters, r.P * r.V, r.P * CLUSTERS)}`,
    `  - the host, per copy: ${perTarget(r.rotation.req.host, r.copies)}`,
    `  - a raw client: 1 PUT per copy`,
  ]),
  '',
  '#### Steady state (nothing changes)',
  '',
  '| P x T | server cores, no ProjectSecrets | server cores, with | etcd cores, with | requests, no ProjectSecrets | requests, with | resync passes in the window |',
  '|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.label} | ${f2(r.idle.server)} | ${f2(r.steady.server)} | ${f2(r.steady.etcd)} | ${r.idle.requests} | ${r.steady.total} | ${f1(r.steady.resyncs)} |`,
  ),
  '',
  'Requests per copy per resync, steady:',
  '',
  ...rows.flatMap((r) => [
    `- ${r.label}: virtual clusters: ${perTarget(r.steady.req.vcs, r.P * r.V * r.steady.resyncs)}`,
    `  - connected clusters, per copy: ${perClusterTarget(r.steady.req.clusters, r.P * r.V * r.steady.resyncs, r.P * CLUSTERS * r.steady.resyncs)}`,
    `  - the host, per copy: ${perTarget(r.steady.req.host, r.copies * r.steady.resyncs)}`,
  ]),
  '',
  `#### One virtual cluster down (vc-0, every request 503) during a rotation, ${DOWN_MS / 1000} s`,
  '',
  '| P x T | the others have it after s | requests to vc-0 | per its copy | then: resync passes | to the others (other virtual clusters, connected clusters, host) | what those passes cost in steady state | server cores then | vc-0 has it s after it is back |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.label} | ${s(r.down.othersDone)} | ${r.down.toDown.total} | ${f1(r.down.toDown.total / r.P)} | ${f1(r.down.passes)} | ${r.down.toOthersAfter.total} (${r.down.toOthersAfterVcs.total}, ${r.down.toClustersAfter.total}, ${r.down.toHostAfter.total}) | ${f1(r.down.expectedOthers)} | ${f2(r.down.serverAfter)} | ${s(r.down.recovered)} |`,
  ),
  '',
  ...rows.flatMap((r) => [
    `- ${r.label}: to vc-0 over the window: ${perTarget(r.down.toDown, 1)}; after the others had it (${f1(r.down.afterSeconds)} s): the other virtual clusters ${perTarget(r.down.toOthersAfterVcs, 1)}; the connected clusters ${perTarget(r.down.toClustersAfter, 1)}`,
  ]),
];
console.log(lines.join('\n'));
process.exit(0);
