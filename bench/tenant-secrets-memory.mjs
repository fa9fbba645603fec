// What a tenant's Secrets labelled as the server's cost the server: the ProjectSecret delivery controller watches the
// host's Secrets labelled app.kubernetes.io/managed-by=platform-management-api, and anyone who may create a Secret
// can label one so. Two rows, each a server child (bench/server-child.mjs, one etcd for both) with --kubeconfig and
// ProjectSecret delivery on, idled until its delivery controller has listed and watched, then asked for its memory
// after a forced GC (RSS, used heap, and external: Buffers and strings V8 holds outside its heap): a host with no
// such Secrets, and one with --secrets of them [100], 1 MiB of data each.
// The host is a stand-in, as in bench/host-memory.mjs, but /api/v1/secrets is answered as kube-apiserver answers
// it: full Secrets, or PartialObjectMetadata(List) when the Accept header asks for metadata only; lists paged by
// `limit` and `continue`; a watch from a list's resourceVersion has no initial events, one without (or from "0")
// starts with every Secret ADDED; watches stay open.
// Usage: npm run build && node bench/tenant-secrets-memory.mjs [--secrets 100]
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dist, f1, forkServerChild, log, mib, sleep, startEtcd } from './lib.mjs';

const { values: args } = parseArgs({ options: { secrets: { type: 'string', default: '100' } } });
const IDLE_MS = 5_000;
const WATCH_TIMEOUT_MS = 120_000;
const SELECTOR = 'app.kubernetes.io/managed-by=platform-management-api';
const LIST_RV = '1000';
const dir = mkdtempSync(join(tmpdir(), 'tenant-secrets-memory-'));
const { ensureServingCertificate } = await import(new URL('pki/selfsigned.js', dist).href);
const pki = await ensureServingCertificate({ certDir: join(dir, 'pki'), hosts: [] });

/** `n` Secrets a tenant made in its namespace, with the server's label and 1 MiB of (random) data each. */
const tenantSecrets = (n) =>
  Array.from({ length: n }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `tenant-${i}`,
      namespace: 'tenant-a',
      uid: randomUUID(),
      resourceVersion: String(i + 1),
      labels: { 'app.kubernetes.io/managed-by': 'platform-management-api' },
    },
    type: 'Opaque',
    data: { blob: randomBytes(2 ** 20).toString('base64') },
  }));

// kube's metadata-only forms, as client-go's metadata client asks for them.
const wantsMetadataOnly = (accept = '') => /;\s*as=PartialObjectMetadata(List)?\b/.test(accept);
const metadataOnly = (s) => ({ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: s.metadata });

/**
 * The stand-in host: `secrets` at /api/v1/secrets (for no selector or the server's, the one it asks with), the rest
 * as host-memory.mjs answers it. `watched` resolves when a watch of the Secrets comes.
 */
function standIn(secrets) {
  let sawWatch;
  const watched = new Promise((resolve) => (sawWatch = resolve));
  const server = createServer({ cert: pki.certPem, key: pki.keyPem }, (req, res) => {
    const url = new URL(req.url, 'https://x');
    const q = url.searchParams;
    const watch = q.get('watch') === 'true';
    res.setHeader('content-type', 'application/json');
    if (req.method === 'GET' && url.pathname === '/api/v1/secrets') {
      const items = [null, SELECTOR].includes(q.get('labelSelector')) ? secrets : [];
      const shown = wantsMetadataOnly(req.headers.accept) ? metadataOnly : (s) => s;
      log(`  host: GET ${url.pathname}${url.search}${shown === metadataOnly ? ' (metadata only)' : ''}`);
      if (watch) {
        sawWatch();
        res.writeHead(200).flushHeaders();
        if ([null, '', '0'].includes(q.get('resourceVersion')))
          for (const s of items) res.write(`${JSON.stringify({ type: 'ADDED', object: shown(s) })}\n`);
        return;
      }
      // A chunk: `continue` is the offset of the next item.
      const from = Number(q.get('continue') || 0);
      const limit = Number(q.get('limit') || 0);
      const page = limit > 0 ? items.slice(from, from + limit) : items.slice(from);
      const left = items.length - from - page.length;
      const more = left > 0 ? { continue: String(from + page.length), remainingItemCount: left } : {};
      const metadata = { resourceVersion: LIST_RV, ...more };
      const [kind, apiVersion] = wantsMetadataOnly(req.headers.accept)
        ? ['PartialObjectMetadataList', 'meta.k8s.io/v1']
        : ['SecretList', 'v1'];
      // Items of a typed list carry no kind or apiVersion, as kube sends them; written one at a time.
      const item = kind === 'SecretList' ? ({ kind: _k, apiVersion: _a, ...rest }) => rest : metadataOnly;
      res.write(`{"kind":"${kind}","apiVersion":"${apiVersion}","metadata":${JSON.stringify(metadata)},"items":[`);
      page.forEach((s, i) => res.write(`${i ? ',' : ''}${JSON.stringify(item(s))}`));
      return res.end(']}');
    }
    if (req.method === 'GET' && watch) return res.writeHead(200).flushHeaders();
    if (req.method === 'POST' && /reviews$/.test(url.pathname))
      return req.resume().on('end', () => res.end('{"status":{}}'));
    if (req.method === 'GET' && url.pathname === '/version') return res.end('{"gitVersion":"v1.33.0"}');
    if (req.method === 'GET' && !/extension-apiserver-authentication/.test(url.pathname))
      return res.end('{"kind":"List","items":[],"metadata":{"resourceVersion":"1"}}');
    res.writeHead(404).end('{"kind":"Status","status":"Failure","reason":"NotFound","code":404}');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, watched })));
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

/** A server child on a stand-in host holding `n` tenant Secrets: its memory after GC, once delivery has watched. */
async function serverMemory(n) {
  const { server: host, watched } = await standIn(tenantSecrets(n));
  const data = join(dir, `secrets-${n}`);
  const kubeconfig = join(dir, `host-${n}.kubeconfig`);
  writeFileSync(kubeconfig, kubeconfigText(host.address().port));
  const child = forkServerChild(
    { ...etcdConfig, dataDir: data, certDir: join(data, 'certs'), kubeconfig, projectSecretDelivery: true },
    { execArgv: ['--expose-gc'] },
  );
  await child.ready;
  let timer;
  const timeout = new Promise((_, reject) => {
    const message = `no watch of /api/v1/secrets within ${WATCH_TIMEOUT_MS / 1000} s: is delivery running?`;
    timer = setTimeout(() => reject(new Error(message)), WATCH_TIMEOUT_MS);
  });
  await Promise.race([watched, timeout]).finally(() => clearTimeout(timer));
  await sleep(IDLE_MS);
  const { memory } = await child.ask('gc');
  await child.stop();
  host.closeAllConnections();
  host.close();
  log(`${n} tenant Secrets:`, f1(mib(memory.rss)), f1(mib(memory.heapUsed)), f1(mib(memory.external)));
  return { n, rss: mib(memory.rss), heap: mib(memory.heapUsed), external: mib(memory.external) };
}

const { etcdProc, serverConfig: etcdConfig } = await startEtcd(dir);
const none = await serverMemory(0);
const some = await serverMemory(Number(args.secrets));
const cells = (r) => [r.rss, r.heap, r.external].map(f1).join(' | ');
const diff = { rss: some.rss - none.rss, heap: some.heap - none.heap, external: some.external - none.external };
console.log(`Server: ${dist.pathname}\n`);
console.log("| Tenant Secrets with the server's label (1 MiB each) | RSS MiB | heap used MiB | external MiB |");
console.log('|---|---:|---:|---:|');
for (const r of [none, some]) console.log(`| ${r.n} | ${cells(r)} |`);
console.log(`| difference | ${cells(diff)} |`);
await etcdProc.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
