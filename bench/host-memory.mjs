// Idle memory of the server without a host cluster, with one, and the cost of connected clusters: each server runs
// in its own child (bench/server-child.mjs, one etcd for both, its data dir in a temp dir), idles, and is
// asked for its memory after a forced GC. The host is a stand-in here (an https server answering lists empty, holding
// watches open, 404 for the rest): what is measured is the client and the connections, not a cluster's data. The cost
// of connected clusters is measured in this process with the built HostCluster: one connection, then ten, each to its
// own port, each having answered a request. Usage: npm run build && node bench/host-memory.mjs
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import { dist, f1, forkServerChild, log, mib, sleep, startEtcd } from './lib.mjs';

const IDLE_MS = 5_000;
const dir = mkdtempSync(join(tmpdir(), 'host-memory-'));
const { ensureServingCertificate } = await import(new URL('pki/selfsigned.js', dist).href);
const pki = await ensureServingCertificate({ certDir: join(dir, 'pki'), hosts: [] });

/** The stand-in: empty lists, watches held open, TokenReview and SubjectAccessReview answered, 404 otherwise. */
function standIn() {
  const server = createServer({ cert: pki.certPem, key: pki.keyPem }, (req, res) => {
    const url = new URL(req.url, 'https://x');
    res.setHeader('content-type', 'application/json');
    if (req.method === 'GET' && url.searchParams.get('watch') === 'true') return res.writeHead(200).flushHeaders();
    if (req.method === 'POST' && /reviews$/.test(url.pathname))
      return req.resume().on('end', () => res.end('{"status":{}}'));
    if (req.method === 'GET' && url.pathname === '/version') return res.end('{"gitVersion":"v1.33.0"}');
    if (req.method === 'GET' && !/extension-apiserver-authentication/.test(url.pathname))
      return res.end('{"kind":"List","items":[],"metadata":{"resourceVersion":"1"}}');
    res.writeHead(404).end('{"kind":"Status","status":"Failure","reason":"NotFound","code":404}');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
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

async function serverMemory(label, overrides) {
  const data = join(dir, label.replace(/\W+/g, '-'));
  const child = forkServerChild(
    { ...etcdConfig, dataDir: data, certDir: join(data, 'certs'), ...overrides },
    { execArgv: ['--expose-gc'] },
  );
  await child.ready;
  await sleep(IDLE_MS);
  const { memory } = await child.ask('gc');
  await child.stop();
  log(label, f1(mib(memory.rss)), f1(mib(memory.heapUsed)));
  return { label, rss: mib(memory.rss), heap: mib(memory.heapUsed) };
}

const { etcdProc, serverConfig: etcdConfig } = await startEtcd(dir);
const rows = [];
const host = await standIn();
const hostKubeconfig = join(dir, 'host.kubeconfig');
writeFileSync(hostKubeconfig, kubeconfigText(host.address().port));
rows.push(await serverMemory('server, no host cluster (embedded default)', {}));
rows.push(await serverMemory('server, with a host cluster (--kubeconfig)', { kubeconfig: hostKubeconfig }));

// Connected clusters, in this process: what each HostCluster of a stored kubeconfig adds once it has connected.
const { HostCluster } = await import(new URL('host/cluster.js', dist).href);
const { kubeConfigFromData } = await import(new URL('host/storedkubeconfig.js', dist).href);
const measure = () => {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  return { rss: mib(m.rss), heap: mib(m.heapUsed) };
};
const stands = await Promise.all(Array.from({ length: 10 }, standIn));
const clusters = [];
const connect = async (n) => {
  while (clusters.length < n) {
    const c = new HostCluster(kubeConfigFromData(kubeconfigText(stands[clusters.length].address().port)));
    await c.request('version', 'GET', '/version');
    clusters.push(c);
  }
  await sleep(1000);
  return measure();
};
const before = measure();
const one = await connect(1);
const ten = await connect(10);
rows.push({ label: 'client process: before any cluster', ...before });
rows.push({ label: 'client process: 1 connected cluster (client loaded)', ...one });
rows.push({ label: 'client process: 10 connected clusters', ...ten });

const heapLimit = mib(v8.getHeapStatistics().heap_size_limit);
console.log('| What | RSS MiB | heap used MiB |\n|---|---:|---:|');
for (const r of rows) console.log(`| ${r.label} | ${f1(r.rss)} | ${f1(r.heap)} |`);
console.log(
  `\nEach connected cluster past the first: ${f1((ten.rss - one.rss) / 9)} MiB RSS, ${f1((ten.heap - one.heap) / 9)} MiB heap (this process's heap limit ${f1(heapLimit)} MiB).`,
);
for (const s of [host, ...stands]) {
  s.closeAllConnections();
  s.close();
}
await etcdProc.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
