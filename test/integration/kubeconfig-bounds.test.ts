/**
 * The kube config action against virtual clusters a tenant controls: the connection Secret `vc-<name>` may point at
 * a server the tenant runs (test/support/hostilecluster.ts, in front of a real stand-in). What the server reads of
 * its answers is bounded (the connection is cut past it: 503, the reason logged), the approval sends nothing of the
 * answer back but the request's identity, requests at once are bounded per caller and in all (429), and the servers
 * a connection may name are limited: link-local addresses never, and with --virtual-cluster-allowed-servers only
 * those it lists.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import yaml from 'js-yaml';
import { X509Certificate } from 'node:crypto';
import {
  MAX_REQUESTS,
  MAX_REQUESTS_PER_USER,
  CONNECTION_UNAVAILABLE,
} from '../../src/actions/virtualclusterkubeconfig.js';
import { HostCluster } from '../../src/host/cluster.js';
import { MAX_ANSWER_BYTES } from '../../src/clusters/virtualcluster.js';
import { kubeConfigFromData } from '../../src/host/storedkubeconfig.js';
import { ServerAllowList } from '../../src/host/serverallowlist.js';
import { createLogger } from '../../src/log.js';
import { API_VERSION, uniq, virtualClusterInstancesPath as vcis } from '../support/fixtures.js';
import { HEALTH_INTERVAL_MS, connectCluster } from '../support/connectedclusters.js';
import { startHostCluster, type HostClusterStandIn } from '../support/hostcluster.js';
import { startHostileVirtualCluster, type HostileVirtualCluster } from '../support/hostilecluster.js';
import type { HttpClient, HttpResponse } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const MIB = 1024 * 1024;
const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
const USERS = ['bob', 'carol', 'dave', 'erin', 'frank'] as const;
type User = (typeof USERS)[number];

let host: HostClusterStandIn;
let vcluster: HostClusterStandIn;
let hostile: HostileVirtualCluster;
let ts: TestServer;
let root: HttpClient;
let as: Record<User, HttpClient>;
/** The server's log lines. */
const logged: string[] = [];

beforeAll(async () => {
  host = await startHostCluster();
  vcluster = await startHostCluster();
  hostile = await startHostileVirtualCluster(vcluster);
  const users = { root: ['system:masters'], ...Object.fromEntries(USERS.map((u) => [u, []])) } as Record<
    'root' | User,
    string[]
  >;
  const server = await startTestServerWithUsers(
    users,
    { kubeconfig: host.kubeconfigPath, clusterHealthIntervalMs: HEALTH_INTERVAL_MS },
    undefined,
    createLogger((line) => logged.push(line)),
  );
  ts = server;
  ({ root, ...as } = server.as);
  // The virtual clusters are in the host stand-in: the local Cluster eu-1.
  await connectCluster(root, host, 'eu-1', host);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await hostile?.stop();
  await host?.stop();
  await vcluster?.stop();
}, 60_000);

const kubeconfigPath = (ns: string, name: string) => `${vcis(ns)}/${name}/kubeconfig`;

/** A VirtualClusterInstance owned by `owners` whose connection Secret holds `config`; its kube config path. */
async function instance(admin: HttpClient, config: string, owners: readonly string[] = USERS): Promise<string> {
  const ns = uniq('p');
  host.addNamespace(ns);
  const name = uniq('vc');
  host.addSecret(`vcluster-${name}`, `vc-${name}`, { config });
  const res = await admin.post(vcis(ns), {
    apiVersion: API_VERSION,
    kind: 'VirtualClusterInstance',
    metadata: { name },
    spec: {
      access: [{ verbs: ['get', 'create'], subresources: ['kubeconfig'], users: [...owners] }],
      clusterRef: { cluster: 'eu-1', namespace: `vcluster-${name}`, virtualCluster: name },
      ingressEndpoint: `https://${name}.vc.example.com`,
    },
  });
  expect(res.status).toBe(201);
  return kubeconfigPath(ns, name);
}

/** `kubeconfig` (a stand-in's) with its cluster's server replaced. */
function withServer(kubeconfig: string, server: string): string {
  const config = yaml.load(kubeconfig) as any;
  config.clusters[0].cluster.server = server;
  return yaml.dump(config);
}

/** The reasons the server logged for the instance of `path`. */
function loggedAbout(path: string): string {
  const name = path.split('/').slice(-2)[0];
  return logged
    .map((line) => JSON.parse(line))
    .filter((l) => `${l.instance}`.endsWith(`/${name}`))
    .map((l) => `${l.msg}: ${l.reason}`)
    .join('\n');
}

/** The one 503 a caller gets for every connection problem, and the reason in the log. */
function expectUnavailable(res: HttpResponse, path: string, reason: string): void {
  expect({ status: res.status, reason: res.body.reason, message: res.body.message }).toEqual({
    status: 503,
    reason: 'ServiceUnavailable',
    message: CONNECTION_UNAVAILABLE,
  });
  expect(loggedAbout(path)).toContain(reason);
}

const certificateOf = (res: HttpResponse) => {
  const config = yaml.load(res.body.status.kubeConfig) as any;
  return new X509Certificate(Buffer.from(config.users[0].user['client-certificate-data'], 'base64'));
};

const isCreate = (r: { method: string; path: string }) => r.method === 'POST' && r.path === CSRS;
const approvals = () => hostile.received.filter((r) => r.method === 'PUT' && r.path.endsWith('/approval'));

describe('answers larger than the bound', () => {
  test('an endless CSR answer: 503, the connection cut soon after the bound (not read to its end), the reason logged', async () => {
    const path = await instance(root, hostile.kubeconfigText());
    const total = 32 * MIB;
    hostile.answer = (r) => (isCreate(r) ? { stream: total } : undefined);
    const started = hostile.outcomes.length;
    const before = hostile.received.length;
    try {
      const res = await as.bob.get(path);
      expectUnavailable(
        res,
        path,
        `creating a CertificateSigningRequest in the virtual cluster: the answer is larger than ${MAX_ANSWER_BYTES} bytes, the most read from this server`,
      );
      // Before the bound the server read all 32 MiB into memory (and parsed them).
      const outcome = await hostile.outcomes[started];
      expect(outcome).toMatchObject({ total, cutShort: true });
      expect(outcome.written).toBeLessThan(total / 2);
      // Nothing after the create: no approval.
      expect(hostile.received.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual([`POST ${CSRS}`]);
    } finally {
      hostile.answer = undefined;
    }
  });

  test('an answer whose Content-Length is 300 MiB is refused at once, before its body', async () => {
    const path = await instance(root, hostile.kubeconfigText());
    hostile.answer = (r) => (isCreate(r) ? { announce: 300 * MIB } : undefined);
    const started = hostile.outcomes.length;
    try {
      const res = await as.bob.get(path);
      expectUnavailable(
        res,
        path,
        `the answer is larger than ${MAX_ANSWER_BYTES} bytes (Content-Length ${300 * MIB}), the most read from this server`,
      );
      // The hostile server sees the connection closed: the request did not wait for the body.
      await hostile.outcomes[started];
    } finally {
      hostile.answer = undefined;
    }
  });

  test('an error answer (500 with an endless Status) is bounded too', async () => {
    const path = await instance(root, hostile.kubeconfigText());
    hostile.answer = (r) => (isCreate(r) ? { stream: 4 * MIB, status: 500 } : undefined);
    try {
      expectUnavailable(await as.bob.get(path), path, `the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    } finally {
      hostile.answer = undefined;
    }
  });
});

describe('the approval', () => {
  test('sends back only the request it approves (name, uid, resourceVersion, its own spec), nothing the answer added', async () => {
    const path = await instance(root, hostile.kubeconfigText());
    const extra = 'x'.repeat(100_000);
    hostile.answer = (r) =>
      isCreate(r)
        ? {
            change: (csr) => ({
              ...csr,
              hostile: extra,
              metadata: {
                ...csr.metadata,
                labels: { hostile: 'label' },
                annotations: { hostile: extra },
                finalizers: ['hostile.example.com/keep'],
                ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: 'hostile', uid: 'hostile' }],
              },
              spec: { ...csr.spec, hostile: extra, username: 'hostile' },
              status: { hostile: extra, conditions: [{ type: 'Hostile', status: 'True' }] },
            }),
          }
        : undefined;
    const before = approvals().length;
    try {
      const res = await as.bob.get(path);
      expect(res.status).toBe(200);
      expect(certificateOf(res).subject).toBe('CN=bob');
      const sent = approvals().slice(before);
      expect(sent).toHaveLength(1);
      const created = vcluster.csrs().find((c) => c.metadata.name === sent[0].path.split('/').slice(-2)[0])!;
      // Before: the whole answer went back, its added fields (and 100 KB strings) with it.
      expect(sent[0].body).toEqual({
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'CertificateSigningRequest',
        metadata: {
          name: created.metadata.name,
          uid: created.metadata.uid,
          resourceVersion: expect.any(String),
        },
        spec: {
          request: created.spec.request,
          signerName: 'kubernetes.io/kube-apiserver-client',
          usages: ['digital signature', 'key encipherment', 'client auth'],
          expirationSeconds: 86400,
        },
        status: {
          conditions: [
            {
              type: 'Approved',
              status: 'True',
              reason: 'PlatformKubeConfig',
              message: 'kube config for bob, approved by the management API',
            },
          ],
        },
      });
      expect(JSON.stringify(sent[0].body)).not.toContain('hostile');
    } finally {
      hostile.answer = undefined;
    }
  });

  test('an answer without a usable name: 503, nothing approved', async () => {
    const path = await instance(root, hostile.kubeconfigText());
    hostile.answer = (r) =>
      isCreate(r) ? { change: (csr) => ({ ...csr, metadata: { ...csr.metadata, name: 'a/../b' } }) } : undefined;
    const before = approvals().length;
    try {
      expectUnavailable(
        await as.bob.get(path),
        path,
        'creating a CertificateSigningRequest in the virtual cluster: the answer has no usable metadata.name',
      );
      expect(approvals().length).toBe(before);
    } finally {
      hostile.answer = undefined;
    }
  });
});

describe('requests at once', () => {
  /**
   * Keeps kube config requests in flight: while held, the virtual cluster's CSRs read back without their
   * certificate, so the requests poll (up to their signing timeout) until released.
   */
  function hold(): { release(): void } {
    let held = true;
    hostile.answer = (r) =>
      held && r.method === 'GET' && r.path.startsWith(`${CSRS}/`)
        ? { change: (csr) => ({ ...csr, status: { ...csr.status, certificate: undefined } }) }
        : undefined;
    return {
      release() {
        held = false;
        hostile.answer = undefined;
      },
    };
  }

  /** Resolves once `n` more requests than `before` are polling (approved, waiting for the certificate). */
  const polling = (before: number, n: number) =>
    waitFor(`${n} kube config requests in flight`, () => approvals().length >= before + n);

  test(`at most ${MAX_REQUESTS_PER_USER} per caller: the next is 429 with Retry-After at once; other callers go on`, async () => {
    const path = await instance(root, hostile.kubeconfigText());
    const before = approvals().length;
    const gate = hold();
    const pending: Promise<HttpResponse>[] = [];
    try {
      pending.push(
        as.bob.get(path),
        as.bob.post(path, { apiVersion: API_VERSION, kind: 'VirtualClusterInstanceKubeConfig', spec: {} }),
      );
      await polling(before, MAX_REQUESTS_PER_USER);
      const refused = await as.bob.get(path);
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body).toMatchObject({
        kind: 'Status',
        reason: 'TooManyRequests',
        code: 429,
        message: `Too many kube config requests at once: at most ${MAX_REQUESTS_PER_USER} per user; please try again later.`,
        details: { retryAfterSeconds: 1 },
      });
      // Another caller is not held back by bob's requests.
      pending.push(as.carol.get(path));
      await polling(before, MAX_REQUESTS_PER_USER + 1);
    } finally {
      gate.release();
    }
    const done = await Promise.all(pending);
    expect(done.map((r) => r.status)).toEqual([200, 201, 200]);
    // Places are given back: bob is served again.
    expect((await as.bob.get(path)).status).toBe(200);
  });

  test(`at most ${MAX_REQUESTS} in all: the next caller's is 429 at once`, async () => {
    const path = await instance(root, hostile.kubeconfigText());
    const before = approvals().length;
    const gate = hold();
    const pending: Promise<HttpResponse>[] = [];
    const holders = USERS.slice(0, MAX_REQUESTS / MAX_REQUESTS_PER_USER);
    try {
      for (const u of holders) for (let i = 0; i < MAX_REQUESTS_PER_USER; i++) pending.push(as[u].get(path));
      await polling(before, MAX_REQUESTS);
      const refused = await as.frank.get(path);
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body.message).toBe(
        `Too many kube config requests at once: at most ${MAX_REQUESTS} in all; please try again later.`,
      );
    } finally {
      gate.release();
    }
    expect((await Promise.all(pending)).map((r) => r.status)).toEqual(Array(MAX_REQUESTS).fill(200));
    expect((await as.frank.get(path)).status).toBe(200);
  }, 30_000);
});

describe('servers a connection may name', () => {
  test.each([
    ['169.254.169.254', '169.254.169.254 is in 169.254.0.0/16'],
    ['[fe80::1]', 'fe80::1 is in fe80::/10'],
    ['[::ffff:169.254.169.254]', '::ffff:a9fe:a9fe is in 169.254.0.0/16'],
    ['[fd00:ec2::254]', 'fd00:ec2::254 is in fd00:ec2::254/128'],
  ])('link-local and cloud metadata addresses are refused by default (%s): 503, the reason logged', async (at, why) => {
    const path = await instance(root, withServer(vcluster.kubeconfigText(), `https://${at}`));
    expectUnavailable(
      await as.bob.get(path),
      path,
      `${why} (link-local, where cloud metadata services answer), which is never connected to unless --virtual-cluster-allowed-servers lists a range inside it`,
    );
  });

  describe('with --virtual-cluster-allowed-servers=localhost', () => {
    let narrowed: Awaited<ReturnType<typeof startTestServerWithUsers<'root'>>>;

    beforeAll(async () => {
      narrowed = await startTestServerWithUsers(
        { root: ['system:masters'] },
        {
          kubeconfig: host.kubeconfigPath,
          virtualClusterAllowedServers: ['localhost'],
          clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
        },
        ts.etcd,
        createLogger((line) => logged.push(line)),
      );
      await connectCluster(narrowed.as.root, host, 'eu-1', host);
    }, 60_000);
    afterAll(async () => {
      await narrowed?.stop();
    }, 60_000);

    test('a listed name is connected to; the same server by an address not listed is refused (503, logged)', async () => {
      const admin = narrowed.as.root;
      const port = new URL(vcluster.url).port;
      const listed = await instance(admin, withServer(vcluster.kubeconfigText(), `https://localhost:${port}`));
      expect((await admin.get(listed)).status).toBe(200);

      vcluster.resetCounts();
      const unlisted = await instance(admin, vcluster.kubeconfigText());
      expectUnavailable(
        await admin.get(unlisted),
        unlisted,
        `creating a CertificateSigningRequest in the virtual cluster: 127.0.0.1 is not in --virtual-cluster-allowed-servers`,
      );
      expect(vcluster.count('certificatesigningrequests')).toBe(0);
    });
  });
});

describe("a virtual cluster's client (HostCluster with the bounds)", () => {
  test('a watch event longer than the bound ends the watch with an error and cuts the connection', async () => {
    const client = new HostCluster(kubeConfigFromData(hostile.kubeconfigText()), {
      maxResponseBytes: MAX_ANSWER_BYTES,
      allowedServers: new ServerAllowList([], '--virtual-cluster-allowed-servers'),
    });
    const total = 32 * MIB;
    hostile.answer = (r) => (r.query.includes('watch=true') ? { stream: total } : undefined);
    const started = hostile.outcomes.length;
    try {
      const ended = new Promise<unknown>((resolve) => {
        void client.watch('watching CSRs', CSRS, {}, () => {}, resolve);
      });
      expect(String(await ended)).toContain(
        `watching CSRs: the host cluster sent a watch event larger than ${MAX_ANSWER_BYTES} bytes`,
      );
      const outcome = await hostile.outcomes[started];
      expect(outcome.cutShort).toBe(true);
      expect(outcome.written).toBeLessThan(total / 2);
    } finally {
      hostile.answer = undefined;
    }
  });
});
