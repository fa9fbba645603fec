/**
 * The Helm chart (deploy/chart) with the real helm v4: lint, render, and check what a platform admin relies on —
 * every object valid for Kubernetes 1.33, the APIService trusting the serving certificate, the server started
 * with flags its own parser accepts, RBAC narrowed to what the server's code does in the cluster, etcd with TLS
 * (1 or 3 members, or external), workers and heaps sized from the pod’s resources, bad values refused by
 * values.schema.json, certificates kept across upgrades, and no CRDs.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { grantableResources } from '../../src/access/rbac.js';
import { parseFlags, type Config } from '../../src/config.js';
import { parseTracingConfig } from '../../src/observability/tracingconfig.js';
import { parseSnapshotArgs } from '../../src/snapshot-command.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import { strategies } from '../../src/kinds/index.js';
import { helm, repoRoot } from '../support/helm.js';
import { runToCompletion } from '../support/tools.js';
import { startFakeCluster, type FakeCluster } from './fakecluster.js';
import { modelFor, modelProblems, unknownFields, type K8sObject } from './models.js';

const CHART = 'deploy/chart';
const NS = 'platform';
const RELEASE = 'pm';
const FULLNAME = 'pm-platform-management-api';
const ETCD = `${FULLNAME}-etcd`;
const ETCD_HEADLESS = `${ETCD}-headless`;
const SERVICE_DNS = `${FULLNAME}.${NS}.svc`;
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

const VARIANTS = {
  default: [] as string[],
  ha: ['-f', 'test/chart/values/ha.yaml'],
  'external-etcd': ['-f', 'test/chart/values/external-etcd.yaml'],
  'cert-manager': ['-f', 'test/chart/values/cert-manager.yaml'],
  'day-two': ['-f', 'test/chart/values/day-two.yaml'],
};
type Variant = keyof typeof VARIANTS;
const VARIANT_NAMES = Object.keys(VARIANTS) as Variant[];

const EXTERNAL_ENDPOINTS = [
  'https://etcd-0.etcd.example.internal:2379',
  'https://etcd-1.etcd.example.internal:2379',
  'https://etcd-2.etcd.example.internal:2379',
];

/** The objects `helm template` printed. */
class Rendered {
  constructor(readonly docs: K8sObject[]) {}
  all(kind: string): K8sObject[] {
    return this.docs.filter((d) => d.kind === kind);
  }
  find(kind: string, name: string): K8sObject | undefined {
    return this.docs.find((d) => d.kind === kind && d.metadata.name === name);
  }
  get(kind: string, name: string): K8sObject {
    const found = this.find(kind, name);
    if (!found)
      throw new Error(`no ${kind} ${name} among ${this.docs.map((d) => `${d.kind}/${d.metadata.name}`).join(', ')}`);
    return found;
  }
  get deployment(): K8sObject {
    return this.get('Deployment', FULLNAME);
  }
  get container(): any {
    return this.deployment.spec.template.spec.containers[0];
  }
}

async function template(args: string[], opts: { kubeconfig?: string } = {}): Promise<Rendered> {
  const r = await helm(['template', RELEASE, CHART, '--namespace', NS, ...args], opts);
  if (r.code !== 0) throw new Error(`helm template ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  const docs = (yaml.loadAll(r.stdout) as unknown[]).filter((d): d is K8sObject => d !== null && typeof d === 'object');
  return new Rendered(docs);
}

const fromB64 = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
const dnsNames = (cert: X509Certificate) =>
  (cert.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
const issuedBy = (cert: X509Certificate, ca: X509Certificate) => cert.checkIssued(ca) && cert.verify(ca.publicKey);

/** The server's config parsed by its own flag parser from the Deployment's args (throws FlagError on a bad flag). */
function serverConfig(r: Rendered): Config {
  const config = parseFlags(r.container.args);
  if (!config) throw new Error('the args asked for --help');
  return config;
}

/** The Secret and key a file path in the server container comes from (through its volume mounts). */
function secretFile(r: Rendered, file: string): { secretName: string; key: string } {
  const mount = r.container.volumeMounts.find((m: any) => m.mountPath === path.posix.dirname(file));
  if (!mount) throw new Error(`${file} is not under a mount of the server container`);
  const volume = r.deployment.spec.template.spec.volumes.find((v: any) => v.name === mount.name);
  expect(volume?.secret?.secretName).toBeTruthy();
  expect(mount.readOnly).toBe(true);
  return { secretName: volume.secret.secretName, key: path.posix.basename(file) };
}

function flagValue(args: string[], flag: string): string | undefined {
  return args.find((a) => a.startsWith(`--${flag}=`))?.slice(flag.length + 3);
}

const rendered = {} as Record<Variant, Rendered>;

beforeAll(async () => {
  const all = await Promise.all(VARIANT_NAMES.map((v) => template(VARIANTS[v])));
  VARIANT_NAMES.forEach((v, i) => (rendered[v] = all[i]));
});

describe('helm lint --strict', () => {
  test.each(VARIANT_NAMES)('%s values pass', async (variant) => {
    const r = await helm(['lint', '--strict', CHART, ...VARIANTS[variant]]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
  });
});

describe('every rendered object is valid for Kubernetes 1.33', () => {
  test.each(VARIANT_NAMES)('%s', async (variant) => {
    // The ServiceMonitor has no model in the packages: its own test checks it.
    const docs = rendered[variant].docs.filter((d) => d.kind !== 'ServiceMonitor');
    const problems = (await Promise.all(docs.map((d) => modelProblems(d)))).flat();
    expect(problems).toEqual([]);
  });

  test('the models are the 1.33 ones, and the unknown-field check finds a misspelt field', async () => {
    const ContainerStatus = (await import('kubernetes-models/v1/ContainerStatus')) as Record<string, any>;
    expect(Object.keys(new ContainerStatus.ContainerStatus({ stopSignal: 'SIGTERM' }).toJSON())).toContain(
      'stopSignal',
    );
    // 1.34's resource.k8s.io/v1 is not there; 1.33 has v1beta2 at most.
    expect(await modelFor('resource.k8s.io/v1', 'ResourceClaim')).toBeUndefined();

    const deployment = structuredClone(rendered.default.deployment);
    deployment.spec.template.spec.containers[0].readinessProbes =
      deployment.spec.template.spec.containers[0].readinessProbe;
    const Deployment = await modelFor('apps/v1', 'Deployment');
    expect(unknownFields(Deployment!.prototype.validate, deployment)).toEqual([
      '.spec.template.spec.containers[0].readinessProbes',
    ]);
  });

  test('objects are in the release namespace (the front proxy RoleBinding in kube-system), or cluster-scoped', () => {
    const clusterScoped = new Set(['ClusterRole', 'ClusterRoleBinding', 'APIService']);
    for (const variant of VARIANT_NAMES) {
      for (const d of rendered[variant].docs) {
        // RoleBindings: the front proxy reader's in kube-system, the connection Secrets' in each namespace listed.
        const listed = d.roleRef?.name === `${FULLNAME}:virtual-cluster-connections` ? d.metadata.namespace : undefined;
        const expected = clusterScoped.has(d.kind)
          ? undefined
          : d.kind === 'RoleBinding'
            ? (listed ?? 'kube-system')
            : NS;
        if (listed) expect(['vcluster-a', 'vcluster-b']).toContain(listed);
        expect(`${variant} ${d.kind}/${d.metadata.name} in ${d.metadata.namespace}`).toBe(
          `${variant} ${d.kind}/${d.metadata.name} in ${expected}`,
        );
      }
    }
  });
});

describe('no CustomResourceDefinitions', () => {
  test('the chart has no crds/ folder and renders no CRD', () => {
    expect(existsSync(path.join(repoRoot, CHART, 'crds'))).toBe(false);
    for (const variant of VARIANT_NAMES) expect(rendered[variant].all('CustomResourceDefinition')).toEqual([]);
  });
});

describe('APIService and serving certificate', () => {
  test.each(VARIANT_NAMES)(
    '%s: v1.management.platform.sh points at the Service, which reaches the HTTPS port',
    (variant) => {
      const r = rendered[variant];
      const apiService = r.get('APIService', 'v1.management.platform.sh');
      expect(apiService.spec).toMatchObject({
        group: 'management.platform.sh',
        version: 'v1',
        groupPriorityMinimum: 1000,
        versionPriority: 15,
        service: { name: FULLNAME, namespace: NS, port: 443 },
      });
      expect(apiService.spec.insecureSkipTLSVerify).toBeUndefined();
      const service = r.get('Service', FULLNAME);
      expect(service.spec.selector).toEqual(r.deployment.spec.selector.matchLabels);
      expect(service.spec.ports).toEqual([{ name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' }]);
      expect(r.container.ports).toEqual([{ name: 'https', containerPort: 8443, protocol: 'TCP' }]);
    },
  );

  test.each(['default', 'ha', 'external-etcd'] as Variant[])(
    '%s (generated): caBundle verifies the serving certificate, which names <svc>.<ns>.svc',
    (variant) => {
      const r = rendered[variant];
      const caBundle = r.get('APIService', 'v1.management.platform.sh').spec.caBundle;
      const ca = new X509Certificate(fromB64(caBundle));
      const secret = r.get('Secret', `${FULLNAME}-tls`);
      expect(secret.type).toBe('kubernetes.io/tls');
      const cert = new X509Certificate(fromB64(secret.data['tls.crt']));
      expect(ca.ca).toBe(true);
      expect(issuedBy(cert, ca)).toBe(true);
      expect(cert.checkPrivateKey(createPrivateKey(fromB64(secret.data['tls.key'])))).toBe(true);
      expect(dnsNames(cert).sort()).toEqual(
        [FULLNAME, `${FULLNAME}.${NS}`, SERVICE_DNS, `${SERVICE_DNS}.cluster.local`].sort(),
      );
      expect(cert.keyUsage).toContain(SERVER_AUTH);
      expect(secret.data['ca.crt']).toBe(caBundle);
      // The server serves exactly that Secret's certificate.
      const config = serverConfig(r);
      expect(secretFile(r, config.tlsCertFile!)).toEqual({ secretName: `${FULLNAME}-tls`, key: 'tls.crt' });
      expect(secretFile(r, config.tlsPrivateKeyFile!)).toEqual({ secretName: `${FULLNAME}-tls`, key: 'tls.key' });
      expect(r.deployment.spec.template.metadata.annotations['checksum/tls']).toMatch(/^[0-9a-f]{64}$/);
    },
  );

  test('cert-manager: self-signed CA chain, serving Certificate for <svc>.<ns>.svc, inject-ca-from and no caBundle', () => {
    const r = rendered['cert-manager'];
    const apiService = r.get('APIService', 'v1.management.platform.sh');
    expect(apiService.metadata.annotations).toEqual({ 'cert-manager.io/inject-ca-from': `${NS}/${FULLNAME}-serving` });
    expect(apiService.spec.caBundle).toBeUndefined();
    expect(r.find('Secret', `${FULLNAME}-tls`)).toBeUndefined(); // cert-manager writes it

    const selfSigned = r.get('Issuer', `${FULLNAME}-selfsigned`);
    expect(selfSigned.spec).toEqual({ selfSigned: {} });
    const caCert = r.get('Certificate', `${FULLNAME}-ca`);
    expect(caCert.spec).toMatchObject({ isCA: true, issuerRef: { kind: 'Issuer', name: `${FULLNAME}-selfsigned` } });
    const caIssuer = r.get('Issuer', `${FULLNAME}-ca`);
    expect(caIssuer.spec).toEqual({ ca: { secretName: caCert.spec.secretName } });
    const serving = r.get('Certificate', `${FULLNAME}-serving`);
    expect(serving.spec).toMatchObject({
      secretName: `${FULLNAME}-tls`,
      issuerRef: { group: 'cert-manager.io', kind: 'Issuer', name: `${FULLNAME}-ca` },
      duration: '2160h',
      renewBefore: '360h',
    });
    expect(serving.spec.dnsNames).toContain(SERVICE_DNS);
    expect(serving.spec.usages).toContain('server auth');
    expect(secretFile(r, serverConfig(r).tlsCertFile!).secretName).toBe(serving.spec.secretName);
  });

  test('cert-manager with an existing issuer: only the serving Certificate, signed by it', async () => {
    const r = await template([
      '--set',
      'tls.mode=certManager',
      '--set',
      'tls.certManager.issuerRef.name=corp-ca',
      '--set',
      'tls.certManager.issuerRef.kind=ClusterIssuer',
    ]);
    expect(r.all('Issuer')).toEqual([]);
    expect(r.all('Certificate').map((c) => [c.metadata.name, c.spec.issuerRef])).toEqual([
      [`${FULLNAME}-serving`, { group: 'cert-manager.io', kind: 'ClusterIssuer', name: 'corp-ca' }],
    ]);
    expect((await Promise.all(r.docs.map((d) => modelProblems(d)))).flat()).toEqual([]);
  });

  test('existingSecret: the given Secret is mounted and the given CA is the caBundle', async () => {
    const caPem = fromB64(rendered.default.get('Secret', `${FULLNAME}-tls`).data['ca.crt']);
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'chart-ca-'));
    try {
      await fs.writeFile(path.join(dir, 'ca.crt'), caPem);
      const r = await template([
        '--set',
        'tls.mode=existingSecret',
        '--set',
        'tls.existingSecret.name=corp-tls',
        '--set-file',
        `tls.existingSecret.caBundle=${path.join(dir, 'ca.crt')}`,
      ]);
      expect(r.find('Secret', `${FULLNAME}-tls`)).toBeUndefined();
      expect(r.all('Certificate')).toEqual([]);
      expect(fromB64(r.get('APIService', 'v1.management.platform.sh').spec.caBundle)).toBe(caPem);
      expect(secretFile(r, serverConfig(r).tlsCertFile!)).toEqual({ secretName: 'corp-tls', key: 'tls.crt' });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  describe('on upgrade', () => {
    let cluster: FakeCluster;
    beforeAll(async () => {
      cluster = await startFakeCluster();
    });
    afterAll(async () => {
      await cluster.close();
    });

    test('the chart reuses its certificates (lookup), so the caBundle and the etcd CA stay the same', async () => {
      const first = rendered.default;
      const names = [`${FULLNAME}-tls`, `${ETCD}-server-tls`, `${ETCD}-client-tls`];
      for (const name of names) {
        const secret = structuredClone(first.get('Secret', name));
        // As installed by Helm: helm adopts only objects of its own release.
        secret.metadata.annotations = { 'meta.helm.sh/release-name': RELEASE, 'meta.helm.sh/release-namespace': NS };
        cluster.secrets.set(`${NS}/${name}`, secret);
      }
      const upgrade = await template(['--dry-run=server', '--disable-openapi-validation', '--is-upgrade'], {
        kubeconfig: cluster.kubeconfig,
      });
      for (const name of names) expect(upgrade.get('Secret', name).data).toEqual(first.get('Secret', name).data);
      expect(upgrade.get('APIService', 'v1.management.platform.sh').spec.caBundle).toBe(
        first.get('APIService', 'v1.management.platform.sh').spec.caBundle,
      );
      // Unchanged certificates do not roll the pods.
      expect(upgrade.deployment.spec.template.metadata.annotations).toEqual(
        first.deployment.spec.template.metadata.annotations,
      );
      expect(upgrade.get('StatefulSet', ETCD).spec.template.metadata.annotations).toEqual(
        first.get('StatefulSet', ETCD).spec.template.metadata.annotations,
      );

      // Without them (a first install) new ones are made.
      cluster.secrets.clear();
      const fresh = await template(['--dry-run=server', '--disable-openapi-validation'], {
        kubeconfig: cluster.kubeconfig,
      });
      expect(fresh.get('Secret', `${FULLNAME}-tls`).data['ca.crt']).not.toBe(
        first.get('Secret', `${FULLNAME}-tls`).data['ca.crt'],
      );
    });
  });
});

describe('full name', () => {
  // Helm's usual rule (`helm create`), plus its mirror image: a name never repeats the release or the chart name.
  test.each([
    ['pm', 'pm-platform-management-api'],
    ['platform', 'platform-management-api'],
    ['platform-management', 'platform-management-api'],
    ['my-platform-management-api', 'my-platform-management-api'],
    ['platformx', 'platformx-platform-management-api'],
  ])('release %s: objects are named %s', async (release, fullname) => {
    const r = await helm(['template', release, CHART, '--namespace', NS]);
    expect(r.code).toBe(0);
    const docs = new Rendered(
      (yaml.loadAll(r.stdout) as K8sObject[]).filter((d) => d !== null && typeof d === 'object'),
    );
    expect(docs.find('Deployment', fullname)).toBeDefined();
    expect(docs.find('Service', fullname)).toBeDefined();
    expect(docs.find('StatefulSet', `${fullname}-etcd`)).toBeDefined();
  });
});

describe('server Deployment', () => {
  test.each([
    ['default', 2],
    ['ha', 3],
    ['external-etcd', 2],
    ['cert-manager', 2],
  ] as [Variant, number][])(
    '%s: %d replicas, probes, security context, data dir, ServiceAccount',
    (variant, replicas) => {
      const r = rendered[variant];
      const d = r.deployment;
      expect(d.spec.replicas).toBe(replicas);
      expect(d.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
      const pod = d.spec.template.spec;
      const c = r.container;
      expect(c.image).toBe('platform-management-api:0.1.0');
      expect(c.livenessProbe.httpGet).toEqual({ path: '/livez', port: 'https', scheme: 'HTTPS' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'https', scheme: 'HTTPS' });
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 65532,
        fsGroup: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(c.securityContext).toMatchObject({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(c.resources.requests).toBeDefined();
      expect(c.resources.limits.memory).toBeDefined();
      // --data-dir is a writable emptyDir (the root filesystem is read-only).
      const config = serverConfig(r);
      const dataMount = c.volumeMounts.find((m: any) => m.mountPath === config.dataDir);
      expect(dataMount?.readOnly).toBeFalsy();
      expect(pod.volumes.find((v: any) => v.name === dataMount.name).emptyDir).toBeDefined();
      expect(pod.serviceAccountName).toBe(FULLNAME);
      expect(pod.automountServiceAccountToken).toBe(true);
      expect(r.get('ServiceAccount', FULLNAME)).toBeDefined();
      expect(d.spec.template.metadata.annotations['checksum/tls']).toMatch(/^[0-9a-f]{64}$/);
      expect(d.spec.template.metadata.annotations['checksum/etcd-tls']).toMatch(/^[0-9a-f]{64}$/);
    },
  );

  test.each(['default', 'ha'] as Variant[])('%s: PodDisruptionBudget and anti-affinity on hostname', (variant) => {
    const r = rendered[variant];
    const selector = r.deployment.spec.selector.matchLabels;
    expect(r.get('PodDisruptionBudget', FULLNAME).spec).toEqual({
      minAvailable: 1,
      selector: { matchLabels: selector },
    });
    expect(
      r.deployment.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution,
    ).toEqual([
      {
        weight: 100,
        podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: selector } },
      },
    ]);
    // The server's selector does not take in the etcd pods.
    expect(selector['app.kubernetes.io/component']).toBe('apiserver');
  });

  test('ha: topology spread over zones gets the pods’ own selector', () => {
    const d = rendered.ha.deployment;
    expect(d.spec.template.spec.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: d.spec.selector.matchLabels },
      },
    ]);
  });

  test('one replica: no PodDisruptionBudget (it would block every drain)', async () => {
    const r = await template(['--set', 'replicaCount=1']);
    expect(r.all('PodDisruptionBudget').map((p) => p.metadata.name)).toEqual([]);
  });
});

describe('Node heap from the memory limit', () => {
  const heapOption = (r: Rendered) => r.container.env?.find((e: any) => e.name === 'NODE_OPTIONS')?.value;

  test.each([
    [[], '--max-old-space-size=480 --max-semi-space-size=16'], // the default limit, 640Mi
    [['--set', 'resources.limits.memory=1Gi'], '--max-old-space-size=768 --max-semi-space-size=16'],
    [['--set', 'resources.limits.memory=1.5Gi'], '--max-old-space-size=1152 --max-semi-space-size=16'],
    [['--set', 'resources.limits.memory=1G'], '--max-old-space-size=715 --max-semi-space-size=16'],
    [['--set', 'resources.limits.memory=2000M'], '--max-old-space-size=1430 --max-semi-space-size=16'],
    [['--set', 'resources.limits.memory=536870912'], '--max-old-space-size=384 --max-semi-space-size=16'],
    [['--set-string', 'resources.limits.memory=536870912'], '--max-old-space-size=384 --max-semi-space-size=16'],
    [['--set', 'heap.limitPercent=50'], '--max-old-space-size=320 --max-semi-space-size=16'],
    [
      ['--set', 'heap.maxOldSpaceSizeMiB=300', '--set', 'resources.limits.memory=1Gi'],
      '--max-old-space-size=300 --max-semi-space-size=16',
    ],
    [
      ['--set', 'heap.maxOldSpaceSizeMiB=300', '--set', 'resources.limits=null'],
      '--max-old-space-size=300 --max-semi-space-size=16',
    ],
  ])('%j: NODE_OPTIONS=%s', async (args, expected) => {
    expect(heapOption(await template(args))).toBe(expected);
  });

  test('no memory limit: no NODE_OPTIONS (Node keeps its own default)', async () => {
    const r = await template(['--set', 'resources.limits=null']);
    expect(r.container.env).toBeUndefined();
    const noResources = await template(['--set', 'resources=null']);
    expect(heapOption(noResources)).toBeUndefined();
  });

  test('a NODE_OPTIONS in extraEnv replaces the chart’s', async () => {
    const r = await template([
      '--set',
      'extraEnv[0].name=NODE_OPTIONS',
      '--set',
      'extraEnv[0].value=--max-old-space-size=99',
    ]);
    expect(r.container.env).toEqual([{ name: 'NODE_OPTIONS', value: '--max-old-space-size=99' }]);
  });

  test('Node takes the rendered option: its heap limit is the one computed', async () => {
    const option = heapOption(await template(['--set', 'resources.limits.memory=640Mi']));
    expect(option).toBe('--max-old-space-size=480 --max-semi-space-size=16');
    const r = await runToCompletion(process.execPath, ['-p', "require('v8').getHeapStatistics().heap_size_limit"], {
      env: { ...process.env, NODE_OPTIONS: option },
      cwd: repoRoot,
      timeoutMs: 30_000,
      what: 'node with the chart’s NODE_OPTIONS',
    });
    expect(r.code).toBe(0);
    // V8's limit is the old space asked for plus the young generation (three semi-spaces of at most 16 MiB).
    const mib = Number(r.stdout.trim()) / 2 ** 20;
    expect(mib).toBeGreaterThanOrEqual(480);
    expect(mib).toBeLessThan(480 + 100);
  });

  test("the young generation's bound is a value of its own; 0 leaves Node's default", async () => {
    expect(heapOption(await template(['--set', 'heap.maxSemiSpaceSizeMiB=8']))).toBe(
      '--max-old-space-size=480 --max-semi-space-size=8',
    );
    expect(heapOption(await template(['--set', 'heap.maxSemiSpaceSizeMiB=0']))).toBe('--max-old-space-size=480');
  });

  test('a memory limit that is no quantity fails at template time, naming it', async () => {
    const r = await helm(['template', RELEASE, CHART, '--set', 'resources.limits.memory=lots']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('resources.limits.memory "lots" is not a memory quantity');
  });
});

describe('workers from the pod’s CPU, and the memory limit shared among them', () => {
  const heapOption = (r: Rendered) => r.container.env?.find((e: any) => e.name === 'NODE_OPTIONS')?.value;
  const memory = (m: string) => ['--set', `resources.limits.memory=${m}`];

  test.each([
    [[], 1], // the default: a request of 100m, no CPU limit
    [['--set', 'resources.limits.cpu=2', ...memory('2Gi')], 2],
    [['--set', 'resources.limits.cpu=1500m', ...memory('2Gi')], 2],
    [['--set-json', 'resources.limits.cpu=1.5', ...memory('2Gi')], 2],
    [['--set-string', 'resources.limits.cpu=1.5', ...memory('2Gi')], 2],
    [['--set', 'resources.limits.cpu=1000m'], 1],
    [['--set', 'resources.limits.cpu=500m', '--set', 'resources.requests.cpu=4', ...memory('4Gi')], 1],
    [['--set', 'resources.requests.cpu=3', ...memory('4Gi')], 3],
    [['--set', 'resources.requests.cpu=2500m', ...memory('4Gi')], 3],
    [['--set', 'resources.requests.cpu=200', '--set', 'resources.limits=null'], 64],
    [['--set', 'resources=null'], 1],
    [['--set', 'workers=3', '--set', 'resources.limits.cpu=2', ...memory('4Gi')], 3],
    [['--set', 'workers=1', '--set', 'resources.limits.cpu=4'], 1],
  ] as [string[], number][])('%j: --workers=%d', async (args, workers) => {
    const r = await template(args);
    expect(flagValue(r.container.args, 'workers')).toBe(String(workers));
    expect(serverConfig(r).workers).toBe(workers);
  });

  test.each([
    // One worker is one process, as before workers: the whole limit.
    [['--set', 'workers=1', ...memory('1152Mi')], '--max-old-space-size=864 --max-semi-space-size=16'],
    // Two: (1152 - 128 for the primary) / 2 = 512 MiB each, 75% of it the heap.
    [['--set', 'resources.limits.cpu=2', ...memory('1152Mi')], '--max-old-space-size=384 --max-semi-space-size=16'],
    [['--set', 'workers=3', ...memory('2Gi')], '--max-old-space-size=480 --max-semi-space-size=16'],
    [
      ['--set', 'workers=2', '--set', 'heap.primaryReserveMiB=0', ...memory('1Gi')],
      '--max-old-space-size=384 --max-semi-space-size=16',
    ],
    [
      ['--set', 'workers=2', '--set', 'heap.limitPercent=50', ...memory('2176Mi')],
      '--max-old-space-size=512 --max-semi-space-size=16',
    ],
    // A heap size set outright is each process's, whatever the workers.
    [
      ['--set', 'workers=4', '--set', 'heap.maxOldSpaceSizeMiB=300'],
      '--max-old-space-size=300 --max-semi-space-size=16',
    ],
  ])('%j: NODE_OPTIONS=%s', async (args, expected) => {
    expect(heapOption(await template(args))).toBe(expected);
  });

  test('workers without a memory limit: no heap limit, and no share to check', async () => {
    const r = await template(['--set', 'workers=4', '--set', 'resources.limits=null']);
    expect(flagValue(r.container.args, 'workers')).toBe('4');
    expect(heapOption(r)).toBeUndefined();
  });

  test('a memory limit too small for the workers fails at template time, saying what would fit', async () => {
    const auto = await helm(['template', RELEASE, CHART, '--set', 'resources.limits.cpu=2']);
    expect(auto.code).not.toBe(0);
    expect(auto.stderr).toContain(
      "2 workers (workers: auto, from the pod's CPU) get 256 MiB each of resources.limits.memory 640Mi, after heap.primaryReserveMiB 128 for the primary process",
    );
    expect(auto.stderr).toContain('set resources.limits.memory to at least 1152Mi');
    const set = await helm(['template', RELEASE, CHART, '--set', 'workers=4', ...memory('2Gi')]);
    expect(set.code).not.toBe(0);
    expect(set.stderr).toContain('4 workers (the value workers) get 480 MiB each');
    expect(set.stderr).toContain('at least 2176Mi');
  });

  test('a CPU that is no quantity fails at template time, naming it', async () => {
    const limit = await helm(['template', RELEASE, CHART, '--set', 'resources.limits.cpu=two']);
    expect(limit.code).not.toBe(0);
    expect(limit.stderr).toContain('resources.limits.cpu "two" is not a CPU quantity: write it as 500m, 2 or 1.5');
    const request = await helm(['template', RELEASE, CHART, '--set', 'resources.requests.cpu=1.5.0']);
    expect(request.code).not.toBe(0);
    expect(request.stderr).toContain('resources.requests.cpu "1.5.0" is not a CPU quantity');
  });

  test('--workers in extraArgs is refused: the chart shares the memory by the value workers', async () => {
    const r = await helm(['template', RELEASE, CHART, '--set', 'extraArgs={--workers=4}']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('extraArgs has "--workers=4": set the value workers instead');
  });

  test('each worker Node forks takes the chart’s heap limit (NODE_OPTIONS is every process’s)', async () => {
    const option = heapOption(await template(['--set', 'resources.limits.cpu=2', ...memory('1152Mi')]));
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'chart-workers-'));
    const script = path.join(dir, 'fork.cjs');
    await fs.writeFile(
      script,
      [
        "const cluster = require('node:cluster');",
        "const limit = () => require('v8').getHeapStatistics().heap_size_limit;",
        "if (cluster.isPrimary) cluster.fork().on('message', (m) => { console.log(m); process.exit(0); });",
        'else process.send(limit());',
      ].join('\n'),
    );
    const r = await runToCompletion(process.execPath, [script], {
      env: { ...process.env, NODE_OPTIONS: option },
      cwd: repoRoot,
      timeoutMs: 30_000,
      what: 'a node:cluster worker with the chart’s NODE_OPTIONS',
    });
    await fs.rm(dir, { recursive: true, force: true });
    expect(r.code).toBe(0);
    const mib = Number(r.stdout.trim()) / 2 ** 20;
    expect(mib).toBeGreaterThanOrEqual(384);
    expect(mib).toBeLessThan(384 + 100);
  });
});

describe('server flags, parsed by the server’s own parser', () => {
  const common = {
    securePort: 8443,
    bindAddress: '0.0.0.0',
    tlsCertFile: '/etc/platform/tls/tls.crt',
    tlsPrivateKeyFile: '/etc/platform/tls/tls.key',
    dataDir: '/var/lib/platform',
    etcdCafile: '/etc/platform/etcd/ca.crt',
    etcdCertfile: '/etc/platform/etcd/tls.crt',
    etcdKeyfile: '/etc/platform/etcd/tls.key',
    shutdownDelayMs: 5000,
    workers: 1,
  };
  const members = (n: number) =>
    Array.from({ length: n }, (_, i) => `https://${ETCD}-${i}.${ETCD_HEADLESS}.${NS}.svc:2379`);

  test.each([
    ['default', { ...common, etcdServers: members(1), tokenIssuer: `https://${SERVICE_DNS}`, etcdPrefix: '/registry' }],
    ['ha', { ...common, etcdServers: members(3), tokenIssuer: `https://${SERVICE_DNS}` }],
    [
      'external-etcd',
      {
        ...common,
        etcdServers: EXTERNAL_ENDPOINTS,
        tokenIssuer: 'https://platform.example.com',
        etcdPrefix: '/platform',
        tokenMaxTtlMs: 12 * 3600_000,
      },
    ],
    ['cert-manager', { ...common, etcdServers: members(1), tokenIssuer: `https://${SERVICE_DNS}` }],
  ] as [Variant, Partial<Config>][])('%s', (variant, expected) => {
    const config = serverConfig(rendered[variant]);
    expect(config).toMatchObject(expected);
    // In-cluster configuration, and the front proxy's settings from kube-system/extension-apiserver-authentication.
    expect(config.kubeconfig).toBeUndefined();
    expect(config.requestheaderClientCaFile).toBeUndefined();
    expect(
      rendered[variant].container.args.filter((a: string) =>
        /^--(kubeconfig|requestheader-|authentication-skip-lookup)/.test(a),
      ),
    ).toEqual([]);
    // The kubelet's SIGKILL comes only after the shutdown delay and the longest request.
    expect(rendered[variant].deployment.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      config.shutdownDelayMs + config.requestTimeoutMs,
    );
  });
});

describe('RBAC', () => {
  const RBAC = 'rbac.authorization.k8s.io';
  const subjects = [{ kind: 'ServiceAccount', name: FULLNAME, namespace: NS }];
  const CONNECTIONS = `${FULLNAME}:virtual-cluster-connections`;
  /**
   * What the access sync may grant in the host, which the server must hold itself: every resource of each kind whose
   * strategy declares host RBAC (src/kinds). A kind that declares it fails here until the chart follows.
   */
  const hostRbacKinds = loadDefinitions().filter((d) => strategies[d.kind]?.access?.hostRbac);
  const hostRbacRule = {
    apiGroups: [...new Set(hostRbacKinds.map((d) => d.group))],
    resources: hostRbacKinds.flatMap(grantableResources).sort(),
    verbs: ['*'],
  };
  /** A rule with its resources sorted, to compare with hostRbacRule. */
  const sortedResources = (rule: any) => ({ ...rule, resources: [...rule.resources].sort() });
  /** Every rule of every Role and ClusterRole the chart makes, with where it comes from. */
  const rulesOf = (r: Rendered) =>
    [...r.all('ClusterRole'), ...r.all('Role')].flatMap((role) =>
      role.rules.map((rule: any) => ({ role: role.metadata.name, ...rule })),
    );

  test.each(VARIANT_NAMES)(
    '%s: exactly auth-delegator, the front proxy reader, the access sync’s and admission’s ClusterRole, and get on Secrets only where asked',
    (variant) => {
      const r = rendered[variant];
      const bindings = r
        .all('ClusterRoleBinding')
        .map((b) => ({ name: b.metadata.name, roleRef: b.roleRef, subjects: b.subjects }));
      // Secrets of the virtual clusters' namespaces: none by default, any namespace (ha), or those listed (day-two).
      const anyNamespace = variant === 'ha';
      const listed = variant === 'day-two' ? ['vcluster-a', 'vcluster-b'] : [];
      expect(bindings).toEqual([
        {
          name: `${FULLNAME}:system:auth-delegator`,
          roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'system:auth-delegator' },
          subjects,
        },
        { name: FULLNAME, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: FULLNAME }, subjects },
        ...(anyNamespace
          ? [{ name: CONNECTIONS, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: CONNECTIONS }, subjects }]
          : []),
      ]);
      const roleBindings = r
        .all('RoleBinding')
        .map((b) => ({ namespace: b.metadata.namespace, roleRef: b.roleRef, subjects: b.subjects }));
      expect(roleBindings).toEqual([
        {
          namespace: 'kube-system',
          roleRef: { apiGroup: RBAC, kind: 'Role', name: 'extension-apiserver-authentication-reader' },
          subjects,
        },
        ...listed.map((namespace) => ({
          namespace,
          roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: CONNECTIONS },
          subjects,
        })),
      ]);
      expect(r.all('Role')).toEqual([]);
      expect(hostRbacRule.resources).toContain('sharedsecrets');
      expect(
        r
          .all('ClusterRole')
          .map((c) => [
            c.metadata.name,
            c.rules.map((rule: any) => (rule.verbs.includes('*') ? sortedResources(rule) : rule)),
          ]),
      ).toEqual([
        [
          FULLNAME,
          [
            {
              apiGroups: [RBAC],
              resources: ['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'],
              verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
            },
            hostRbacRule,
            // Admission: the namespace informer and its live lookups, the webhook configuration informers.
            { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
            {
              apiGroups: ['admissionregistration.k8s.io'],
              resources: [
                'mutatingwebhookconfigurations',
                'validatingwebhookconfigurations',
                'validatingadmissionpolicies',
                'validatingadmissionpolicybindings',
              ],
              verbs: ['list', 'watch'],
            },
            // API Priority and Fairness: the FlowSchema and PriorityLevelConfiguration informers.
            {
              apiGroups: ['flowcontrol.apiserver.k8s.io'],
              resources: ['flowschemas', 'prioritylevelconfigurations'],
              verbs: ['list', 'watch'],
            },
          ],
        ],
        ...(anyNamespace || listed.length
          ? [[CONNECTIONS, [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]]]
          : []),
      ]);
    },
  );

  test.each(VARIANT_NAMES)(
    '%s: no wildcard group or resource, `*` verbs only on the kinds the server serves, nothing that escalates',
    (variant) => {
      const rules = rulesOf(rendered[variant]);
      expect(rules.length).toBeGreaterThan(0);
      for (const rule of rules) {
        expect({ ...rule, nonResourceURLs: rule.nonResourceURLs ?? [] }).toMatchObject({ nonResourceURLs: [] });
        expect(rule.apiGroups).not.toContain('*');
        expect(rule.resources).not.toContain('*');
        for (const verb of ['escalate', 'bind', 'impersonate', 'approve', 'sign', 'deletecollection', 'patch'])
          expect(rule.verbs).not.toContain(verb);
        if (rule.verbs.includes('*')) expect(rule).toMatchObject({ apiGroups: ['management.platform.sh'] });
      }
    },
  );

  test.each(VARIANT_NAMES)(
    '%s: Secrets can be read one by one (get) where asked, never listed or watched',
    (variant) => {
      const rules = rulesOf(rendered[variant]);
      const onSecrets = rules.filter(
        (rule) =>
          rule.apiGroups.includes('') &&
          rule.resources.some((res: string) => res === 'secrets' || res.startsWith('secrets/')),
      );
      const asked = variant === 'ha' || variant === 'day-two';
      expect(onSecrets.map((rule) => [rule.resources, rule.verbs])).toEqual(asked ? [[['secrets'], ['get']]] : []);
      // Nothing else of the core group but reading namespaces (admission): no ConfigMaps (the front proxy's one comes
      // from kube's own Role), no pods.
      expect(
        rules
          .filter((rule) => rule.apiGroups.includes('') && !onSecrets.includes(rule))
          .map((rule) => [rule.resources, rule.verbs]),
      ).toEqual([[['namespaces'], ['get', 'list', 'watch']]]);
    },
  );

  test('rbac.virtualClusterNamespaces lists namespaces: get on Secrets there only, through a RoleBinding in each', async () => {
    const r = await template(['--set', 'rbac.virtualClusterNamespaces={vcluster-a,vcluster-b}']);
    expect(r.all('ClusterRoleBinding').map((b) => b.roleRef.name)).toEqual(['system:auth-delegator', FULLNAME]);
    const connections = r.all('RoleBinding').filter((b) => b.roleRef.name === CONNECTIONS);
    expect(
      connections.map((b) => ({
        namespace: b.metadata.namespace,
        name: b.metadata.name,
        roleRef: b.roleRef,
        subjects: b.subjects,
      })),
    ).toEqual(
      ['vcluster-a', 'vcluster-b'].map((namespace) => ({
        namespace,
        name: CONNECTIONS,
        roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: CONNECTIONS },
        subjects,
      })),
    );
    expect(r.get('ClusterRole', CONNECTIONS).rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
    ]);
    const problems = (await Promise.all(r.docs.map((d) => modelProblems(d)))).flat();
    expect(problems).toEqual([]);
  });

  test('rbac.virtualClusterNamespaces=[] (the default): no access to Secrets at all', async () => {
    const r = rendered.default;
    expect(rulesOf(r).filter((rule) => rule.resources.includes('secrets'))).toEqual([]);
    expect([...r.all('RoleBinding'), ...r.all('ClusterRoleBinding')].map((b) => b.roleRef.name)).toEqual([
      'extension-apiserver-authentication-reader',
      'system:auth-delegator',
      FULLNAME,
    ]);
  });

  test('rbac.projectSecretDelivery: off by default (the server told so); on, Secrets cluster-wide for the delivery', async () => {
    const off = await template([]);
    expect(off.deployment.spec.template.spec.containers[0].args).toContain('--project-secret-delivery=false');
    expect(off.all('ClusterRole').map((c) => c.metadata.name)).not.toContain(`${FULLNAME}:project-secrets`);
    const on = await template(['--set', 'rbac.projectSecretDelivery=true']);
    expect(on.deployment.spec.template.spec.containers[0].args).toContain('--project-secret-delivery=true');
    const name = `${FULLNAME}:project-secrets`;
    expect(on.get('ClusterRole', name).rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] },
    ]);
    expect(
      on
        .all('ClusterRoleBinding')
        .filter((b) => b.roleRef.name === name)
        .map((b) => [b.roleRef, b.subjects]),
    ).toEqual([[{ apiGroup: RBAC, kind: 'ClusterRole', name }, subjects]]);
    const problems = (await Promise.all(on.docs.map((d) => modelProblems(d)))).flat();
    expect(problems).toEqual([]);
  });

  test('rbac.clusterSecrets: get on exactly those Secrets, by name, in each namespace (empty: the release namespace)', async () => {
    const r = await template([
      '--set-json',
      'rbac.clusterSecrets=[{"name":"prod-eu"},{"name":"prod-us"},{"namespace":"infra","name":"edge"},{"name":"prod-eu"}]',
    ]);
    const name = `${FULLNAME}:cluster-secrets`;
    expect(r.all('Role').map((role) => [role.metadata.namespace, role.metadata.name, role.rules])).toEqual([
      ['infra', name, [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['edge'], verbs: ['get'] }]],
      [NS, name, [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['prod-eu', 'prod-us'], verbs: ['get'] }]],
    ]);
    expect(
      r
        .all('RoleBinding')
        .filter((b) => b.roleRef.name === name)
        .map((b) => [b.metadata.namespace, b.roleRef, b.subjects]),
    ).toEqual(['infra', NS].map((ns) => [ns, { apiGroup: RBAC, kind: 'Role', name }, subjects]));
    // The server looks for a Cluster's Secret in the release namespace when its secretNamespace is empty.
    expect(r.deployment.spec.template.spec.containers[0].args).toContain(`--cluster-secret-namespace=${NS}`);
    const problems = (await Promise.all(r.docs.map((d) => modelProblems(d)))).flat();
    expect(problems).toEqual([]);
  });

  test('rbac.watchClusterSecrets: get, list and watch on the Secrets of the release namespace, and the flag; none by default', async () => {
    const off = await template([]);
    expect(off.all('Role').filter((role) => role.metadata.name.endsWith(':cluster-secrets-watch'))).toEqual([]);
    expect(off.deployment.spec.template.spec.containers[0].args).toContain('--watch-cluster-secrets=false');
    const r = await template(['--set', 'rbac.watchClusterSecrets=true']);
    const name = `${FULLNAME}:cluster-secrets-watch`;
    expect(
      r
        .all('Role')
        .filter((role) => role.metadata.name === name)
        .map((role) => [role.metadata.namespace, role.rules]),
    ).toEqual([[NS, [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }]]]);
    expect(
      r
        .all('RoleBinding')
        .filter((b) => b.roleRef.name === name)
        .map((b) => [b.metadata.namespace, b.roleRef, b.subjects]),
    ).toEqual([[NS, { apiGroup: RBAC, kind: 'Role', name }, subjects]]);
    expect(r.deployment.spec.template.spec.containers[0].args).toContain('--watch-cluster-secrets=true');
    const problems = (await Promise.all(r.docs.map((d) => modelProblems(d)))).flat();
    expect(problems).toEqual([]);
  });

  test.each([
    ['a Secret without a name', 'rbac.clusterSecrets=[{"namespace":"infra"}]'],
    ['a name that is not one', 'rbac.clusterSecrets=[{"name":"Prod_EU"}]'],
    ['an unknown field', 'rbac.clusterSecrets=[{"name":"a","key":"config"}]'],
  ])('rbac.clusterSecrets with %s is refused before anything renders', async (_what, value) => {
    const res = await helm(['template', RELEASE, CHART, '--namespace', NS, '--set-json', value]);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('/rbac/clusterSecrets');
  });

  test('rbac.create=false renders no RBAC', async () => {
    const r = await template(['--set', 'rbac.create=false']);
    expect(r.docs.filter((d) => d.apiVersion.startsWith('rbac.authorization.k8s.io/'))).toEqual([]);
  });
});

describe('observability', () => {
  test('by default: --v=0, /metrics needs authorization, no audit log', async () => {
    const config = serverConfig(await template([]));
    expect(config).toMatchObject({ verbosity: 0, authorizationAlwaysAllowPaths: ['/healthz', '/readyz', '/livez'] });
    expect(config.auditLogPath).toBeUndefined();
  });

  test('verbosity, an anonymous /metrics scrape and the audit log on stdout', async () => {
    const config = serverConfig(
      await template([
        '--set',
        'observability.verbosity=3',
        '--set',
        'observability.anonymousMetrics=true',
        '--set',
        'observability.auditLog.enabled=true',
      ]),
    );
    expect(config).toMatchObject({
      verbosity: 3,
      authorizationAlwaysAllowPaths: ['/healthz', '/readyz', '/livez', '/metrics'],
      auditLogPath: '-',
    });
  });
});

describe('tracing', () => {
  test('by default no --tracing-config-file: no tracing, no ConfigMap', async () => {
    const r = await template([]);
    expect(serverConfig(r).tracingConfigFile).toBeUndefined();
    expect(r.docs.some((d) => d.kind === 'ConfigMap')).toBe(false);
  });

  test('enabled: a TracingConfiguration the server accepts, from a ConfigMap mounted where the flag says; a change rolls the pods', async () => {
    const args = [
      '--set',
      'observability.tracing.enabled=true',
      '--set',
      'observability.tracing.endpoint=otel-collector.monitoring:4317',
    ];
    const r = await template([...args, '--set', 'observability.tracing.samplingRatePerMillion=100']);
    const file = serverConfig(r).tracingConfigFile!;
    const mount = r.container.volumeMounts.find((m: any) => m.mountPath === path.posix.dirname(file));
    expect(mount.readOnly).toBe(true);
    const volume = r.deployment.spec.template.spec.volumes.find((v: any) => v.name === mount.name);
    const configMap = r.get('ConfigMap', volume.configMap.name);
    expect(parseTracingConfig(configMap.data[path.posix.basename(file)])).toEqual({
      endpoint: 'otel-collector.monitoring:4317',
      samplingRatePerMillion: 100,
    });
    const other = await template([...args, '--set', 'observability.tracing.samplingRatePerMillion=200']);
    const checksum = (x: Rendered) => x.deployment.spec.template.metadata.annotations['checksum/tracing'];
    expect(checksum(r)).toBeTruthy();
    expect(checksum(other)).not.toBe(checksum(r));
  });
});

describe('audit policy', () => {
  test("policyConfigMap: --audit-policy-file is that ConfigMap's key, mounted read-only", async () => {
    const r = await template([
      '--set',
      'observability.auditLog.enabled=true',
      '--set',
      'observability.auditLog.policyConfigMap=platform-audit',
      '--set',
      'observability.auditLog.policyKey=audit.yaml',
    ]);
    const config = serverConfig(r);
    expect(config).toMatchObject({ auditLogPath: '-', auditPolicyFile: '/etc/platform/audit/audit.yaml' });
    const mount = r.container.volumeMounts.find((m: any) => m.mountPath === '/etc/platform/audit');
    expect(mount).toMatchObject({ name: 'audit-policy', readOnly: true });
    const volume = r.deployment.spec.template.spec.volumes.find((v: any) => v.name === 'audit-policy');
    expect(volume).toEqual({ name: 'audit-policy', configMap: { name: 'platform-audit' } });
  });

  test('by default no --audit-policy-file and no policy volume', async () => {
    const r = await template(['--set', 'observability.auditLog.enabled=true']);
    expect(serverConfig(r).auditPolicyFile).toBeUndefined();
    expect(r.deployment.spec.template.spec.volumes.map((v: any) => v.name)).not.toContain('audit-policy');
  });
});

describe('encryption at rest', () => {
  test('by default no --encryption-provider-config (stored in clear, as kube-apiserver without one)', async () => {
    const r = await template([]);
    expect(serverConfig(r).encryptionProviderConfig).toBeUndefined();
    expect(r.deployment.spec.template.spec.volumes.map((v: any) => v.name)).not.toContain('encryption-config');
  });

  test("existingSecret: the EncryptionConfiguration is that Secret's key, mounted whole (updates reach it) and reloaded", async () => {
    const r = await template([
      '--set',
      'encryptionAtRest.existingSecret=platform-encryption',
      '--set',
      'encryptionAtRest.key=config.yaml',
    ]);
    const config = serverConfig(r);
    expect(config.encryptionProviderConfigAutomaticReload).toBe(true);
    expect(secretFile(r, config.encryptionProviderConfig!)).toEqual({
      secretName: 'platform-encryption',
      key: 'config.yaml',
    });
    expect(r.container.volumeMounts.find((m: any) => m.name === 'encryption-config').subPath).toBeUndefined();
    const reloadOff = serverConfig(
      await template([
        '--set',
        'encryptionAtRest.existingSecret=platform-encryption',
        '--set',
        'encryptionAtRest.automaticReload=false',
      ]),
    );
    expect(reloadOff).toMatchObject({
      encryptionProviderConfig: '/etc/platform/encryption/encryption-config.yaml',
      encryptionProviderConfigAutomaticReload: false,
    });
  });
});

describe('etcd', () => {
  function etcdTLS(r: Rendered) {
    const server = r.get('Secret', `${ETCD}-server-tls`);
    const client = r.get('Secret', `${ETCD}-client-tls`);
    const ca = new X509Certificate(fromB64(server.data['ca.crt']));
    return {
      server,
      client,
      ca,
      serverCert: new X509Certificate(fromB64(server.data['tls.crt'])),
      clientCert: new X509Certificate(fromB64(client.data['tls.crt'])),
    };
  }

  test.each([
    ['default', 1],
    ['ha', 3],
    ['cert-manager', 1],
  ] as [Variant, number][])('%s: a StatefulSet of %d member(s) with client and peer TLS', (variant, n) => {
    const r = rendered[variant];
    const sts = r.get('StatefulSet', ETCD);
    expect(sts.spec.replicas).toBe(n);
    expect(sts.spec.serviceName).toBe(ETCD_HEADLESS);
    expect(sts.spec.podManagementPolicy).toBe('Parallel');
    const headless = r.get('Service', ETCD_HEADLESS);
    expect(headless.spec).toMatchObject({
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: sts.spec.selector.matchLabels,
    });
    expect(sts.spec.selector.matchLabels['app.kubernetes.io/component']).toBe('etcd');

    const c = sts.spec.template.spec.containers[0];
    expect(c.image).toBe('registry.k8s.io/etcd:3.5.21-0');
    const hosts = Array.from({ length: n }, (_, i) => `${ETCD}-${i}.${ETCD_HEADLESS}.${NS}.svc`);
    expect(flagValue(c.args, 'initial-cluster')!.split(',')).toEqual(
      hosts.map((h, i) => `${ETCD}-${i}=https://${h}:2380`),
    );
    expect(c.args).toEqual(
      expect.arrayContaining([
        '--client-cert-auth',
        '--peer-client-cert-auth',
        '--initial-cluster-state=new',
        '--name=$(POD_NAME)',
      ]),
    );
    for (const flag of ['trusted-ca-file', 'peer-trusted-ca-file'])
      expect(flagValue(c.args, flag)).toBe('/etc/etcd/tls/ca.crt');
    for (const flag of ['cert-file', 'peer-cert-file']) expect(flagValue(c.args, flag)).toBe('/etc/etcd/tls/tls.crt');
    for (const flag of ['key-file', 'peer-key-file']) expect(flagValue(c.args, flag)).toBe('/etc/etcd/tls/tls.key');
    expect(flagValue(c.args, 'listen-client-urls')).toMatch(/^https:/);
    expect(flagValue(c.args, 'listen-peer-urls')).toMatch(/^https:/);
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(sts.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true });

    // Persistent data: a claim per member, mounted above --data-dir.
    expect(sts.spec.volumeClaimTemplates.map((t: any) => t.metadata.name)).toEqual(['data']);
    expect(c.volumeMounts.find((m: any) => m.name === 'data').mountPath).toBe(
      path.posix.dirname(flagValue(c.args, 'data-dir')!),
    );
    const tlsVolume = sts.spec.template.spec.volumes.find((v: any) => v.name === 'tls');
    expect(tlsVolume.secret.secretName).toBe(`${ETCD}-server-tls`);

    // One CA: the members' certificate (server and peer) names every member; the server's client certificate.
    const { ca, serverCert, clientCert } = etcdTLS(r);
    expect(issuedBy(serverCert, ca)).toBe(true);
    expect(issuedBy(clientCert, ca)).toBe(true);
    expect(serverCert.keyUsage).toEqual(expect.arrayContaining([SERVER_AUTH, CLIENT_AUTH]));
    expect(clientCert.keyUsage).toContain(CLIENT_AUTH);
    for (const h of hosts) expect(dnsNames(serverCert)).toContain(h);
    const config = serverConfig(r);
    for (const url of config.etcdServers) expect(dnsNames(serverCert)).toContain(new URL(url).hostname);
    for (const file of [config.etcdCafile!, config.etcdCertfile!, config.etcdKeyfile!]) {
      expect(secretFile(r, file)).toEqual({ secretName: `${ETCD}-client-tls`, key: path.posix.basename(file) });
    }
  });

  test('default: one member, 8Gi claim, no PodDisruptionBudget for etcd', () => {
    const r = rendered.default;
    const sts = r.get('StatefulSet', ETCD);
    expect(sts.spec.volumeClaimTemplates[0].spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '8Gi' } },
    });
    expect(r.find('PodDisruptionBudget', ETCD)).toBeUndefined();
  });

  test('ha: three members one per node, a majority kept by the PodDisruptionBudget, sized claims', () => {
    const r = rendered.ha;
    const sts = r.get('StatefulSet', ETCD);
    const selector = sts.spec.selector.matchLabels;
    expect(r.get('PodDisruptionBudget', ETCD).spec).toEqual({ minAvailable: 2, selector: { matchLabels: selector } });
    expect(sts.spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution).toEqual([
      { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: selector } },
    ]);
    expect(sts.spec.volumeClaimTemplates[0].spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'fast-ssd',
      resources: { requests: { storage: '20Gi' } },
    });
    expect(sts.spec.template.spec.containers[0].args).toContain('--quota-backend-bytes=8589934592');
  });

  test('external: no etcd of the chart; the endpoints and the client certificate Secret are used', () => {
    const r = rendered['external-etcd'];
    expect(r.all('StatefulSet')).toEqual([]);
    expect(r.docs.filter((d) => d.metadata.name.startsWith(ETCD))).toEqual([]);
    expect(r.all('Secret').map((s) => s.metadata.name)).toEqual([`${FULLNAME}-tls`]);
    const config = serverConfig(r);
    expect(config.etcdServers).toEqual(EXTERNAL_ENDPOINTS);
    for (const file of [config.etcdCafile!, config.etcdCertfile!, config.etcdKeyfile!]) {
      expect(secretFile(r, file)).toEqual({ secretName: 'platform-etcd-client', key: path.posix.basename(file) });
    }
  });
});

describe('etcd backups (etcd.backup)', () => {
  test('off by default', () => {
    for (const variant of ['default', 'ha', 'external-etcd', 'cert-manager'] as Variant[])
      expect(rendered[variant].all('CronJob')).toEqual([]);
  });

  test.each([
    ['day-two', []],
    [
      'external etcd',
      [
        ...VARIANTS['external-etcd'],
        '--set',
        'etcd.backup.enabled=true',
        '--set',
        'etcd.backup.existingClaim=platform-backups',
      ],
    ],
  ] as [string, string[]][])(
    '%s: a CronJob runs the server image’s `snapshot save --dir` against the server’s etcd with its client certificate, onto the named claim',
    async (name, args) => {
      const r = name === 'day-two' ? rendered['day-two'] : await template(args);
      const cron = r.get('CronJob', `${ETCD}-backup`);
      if (name === 'day-two') expect(cron.spec).toMatchObject({ schedule: '30 1 * * *', timeZone: 'Europe/Paris' });
      expect(cron.spec.concurrencyPolicy).toBe('Forbid');
      const pod = cron.spec.jobTemplate.spec.template.spec;
      const [c] = pod.containers;
      expect(c.image).toBe(r.container.image);
      expect(c.args.slice(0, 2)).toEqual(['snapshot', 'save']);
      // The server's own parser of these flags accepts them.
      const flags = parseSnapshotArgs(c.args.slice(2));
      expect(flags.files).toEqual([]);
      expect(flags.keep).toBe(name === 'day-two' ? 14 : 7);
      const server = serverConfig(r);
      expect(flags.etcdServers).toEqual(server.etcdServers);
      for (const file of [flags.etcdCafile!, flags.etcdCertfile!, flags.etcdKeyfile!]) {
        const mount = c.volumeMounts.find((m: any) => m.mountPath === path.posix.dirname(file));
        const volume = pod.volumes.find((v: any) => v.name === mount.name);
        expect(mount.readOnly).toBe(true);
        expect(volume.secret.secretName).toBe(secretFile(r, server.etcdCafile!).secretName);
      }
      const backups = c.volumeMounts.find((m: any) => flags.dir!.startsWith(`${m.mountPath}/`));
      expect(flags.dir).toBe(`${backups.mountPath}/etcd-snapshots`);
      expect(pod.volumes.find((v: any) => v.name === backups.name).persistentVolumeClaim).toEqual({
        claimName: 'platform-backups',
      });
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsNonRoot: true });
    },
  );

  test('enabled without a claim fails at template time, saying what to set', async () => {
    const r = await helm(['template', RELEASE, CHART, '--namespace', NS, '--set', 'etcd.backup.enabled=true']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('etcd.backup.enabled needs etcd.backup.existingClaim');
  });
});

describe('NetworkPolicies (networkPolicy)', () => {
  const peersOf = (rule: any) => rule.from;
  test('off by default', () => {
    expect(rendered.default.all('NetworkPolicy')).toEqual([]);
  });

  test('the server: only kube-apiserver and the scrapers reach 8443', () => {
    const r = rendered['day-two'];
    const policy = r.get('NetworkPolicy', FULLNAME);
    expect(policy.spec.podSelector.matchLabels).toEqual(r.deployment.spec.selector.matchLabels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toEqual([
      { ports: [{ port: 8443, protocol: 'TCP' }], from: [{ ipBlock: { cidr: '10.0.0.0/24' } }] },
      {
        ports: [{ port: 8443, protocol: 'TCP' }],
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
          },
        ],
      },
    ]);
  });

  test('etcd: only the server pods and the backup job reach 2379, only members 2380, only scrapers 2381', () => {
    const r = rendered['day-two'];
    const policy = r.get('NetworkPolicy', ETCD);
    const sts = r.get('StatefulSet', ETCD);
    expect(policy.spec.podSelector.matchLabels).toEqual(sts.spec.selector.matchLabels);
    const byPort = Object.fromEntries(policy.spec.ingress.map((rule: any) => [rule.ports[0].port, peersOf(rule)]));
    const cronPodLabels = r.get('CronJob', `${ETCD}-backup`).spec.jobTemplate.spec.template.metadata.labels;
    expect(byPort[2379]).toEqual([
      { podSelector: { matchLabels: r.deployment.spec.selector.matchLabels } },
      { podSelector: { matchLabels: cronPodLabels } },
    ]);
    // The server's pods carry the labels the policy lets in; etcd's pods those of the peer rule.
    expect(r.deployment.spec.template.metadata.labels).toMatchObject(byPort[2379][0].podSelector.matchLabels);
    expect(byPort[2380]).toEqual([{ podSelector: { matchLabels: sts.spec.selector.matchLabels } }]);
    expect(sts.spec.template.metadata.labels).toMatchObject(byPort[2380][0].podSelector.matchLabels);
    expect(byPort[2381]).toEqual(r.get('NetworkPolicy', FULLNAME).spec.ingress[1].from);
    expect(Object.keys(byPort).sort()).toEqual(['2379', '2380', '2381']);
  });

  test('with an external etcd only the server’s policy; without apiServerPeers it fails, saying why', async () => {
    const external = await template([
      ...VARIANTS['external-etcd'],
      '--set',
      'networkPolicy.enabled=true',
      '--set-json',
      'networkPolicy.apiServerPeers=[{"ipBlock":{"cidr":"192.168.0.0/16"}}]',
    ]);
    expect(external.all('NetworkPolicy').map((p) => p.metadata.name)).toEqual([FULLNAME]);
    const r = await helm(['template', RELEASE, CHART, '--namespace', NS, '--set', 'networkPolicy.enabled=true']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('networkPolicy.enabled needs networkPolicy.apiServerPeers');
  });
});

describe('ServiceMonitor (serviceMonitor)', () => {
  test('off by default', () => {
    expect(rendered.default.all('ServiceMonitor')).toEqual([]);
  });

  test('selects the server’s Service only, scrapes /metrics over HTTPS verified by the serving CA, with a token', () => {
    const r = rendered['day-two'];
    const monitor = r.get('ServiceMonitor', FULLNAME);
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.metadata.labels).toMatchObject({ release: 'prometheus' });
    const selected = r
      .all('Service')
      .filter((svc) =>
        Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => svc.metadata.labels?.[k] === v),
      );
    expect(selected.map((svc) => svc.metadata.name)).toEqual([FULLNAME]);
    expect(monitor.spec.namespaceSelector).toEqual({ matchNames: [NS] });
    expect(monitor.spec.endpoints).toEqual([
      {
        port: 'https',
        scheme: 'https',
        path: '/metrics',
        interval: '30s',
        scrapeTimeout: '10s',
        bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
        tlsConfig: { serverName: SERVICE_DNS, ca: { secret: { name: `${FULLNAME}-tls`, key: 'ca.crt' } } },
      },
    ]);
    expect(selected[0].spec.ports.map((p: any) => p.name)).toContain('https');
    expect(r.get('Secret', `${FULLNAME}-tls`).data['ca.crt']).toBeTruthy();
  });

  test('anonymous metrics: no token; with an existing Secret without ca.crt it fails, saying why', async () => {
    const anonymous = await template([
      '--set',
      'serviceMonitor.enabled=true',
      '--set',
      'observability.anonymousMetrics=true',
    ]);
    expect(anonymous.get('ServiceMonitor', FULLNAME).spec.endpoints[0].bearerTokenFile).toBeUndefined();
    const r = await helm([
      'template',
      RELEASE,
      CHART,
      '--namespace',
      NS,
      '--set',
      'serviceMonitor.enabled=true',
      '--set',
      'tls.mode=existingSecret',
      '--set',
      'tls.existingSecret.name=corp-tls',
      '--set',
      'tls.existingSecret.caBundle=-----BEGIN CERTIFICATE-----MIIB-----END CERTIFICATE-----',
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('serviceMonitor.enabled verifies the server with the ca.crt');
  });
});

describe('helm test', () => {
  test.each(VARIANT_NAMES)(
    '%s: a test Pod reads the group’s discovery through kube-apiserver (the aggregator path)',
    (variant) => {
      const pod = rendered[variant].get('Pod', `${FULLNAME}-test-api`);
      expect(pod.metadata.annotations?.['helm.sh/hook']).toBe('test');
      expect(pod.spec.restartPolicy).toBe('Never');
      const [c] = pod.spec.containers;
      expect(c.image).toBe('registry.k8s.io/kubectl:v1.33.0');
      expect([...c.command, ...c.args]).toEqual([
        'kubectl',
        'get',
        '--raw',
        '/apis/management.platform.sh/v1',
        '--request-timeout=30s',
      ]);
      expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsNonRoot: true });
    },
  );
});

describe('GitOps: rendering without a cluster (helm template, Argo CD)', () => {
  test('the generated Secrets carry a warning that each render makes new certificates; with a cluster they do not', async () => {
    const offline = await helm(['template', RELEASE, CHART, '--namespace', NS]);
    expect(offline.code).toBe(0);
    expect(offline.stdout).toContain(
      '# WARNING: rendered without a cluster (helm template, Argo CD, --dry-run), where lookup sees nothing: the serving CA and certificate',
    );
    expect(offline.stdout).toContain(
      '# GitOps use tls.mode certManager or existingSecret (docs/operating.md, "GitOps").',
    );
    expect(offline.stdout).toContain('# GitOps set etcd.tls.generate=false and create the Secrets once');
    // cert-manager and no generated etcd certificates: nothing to warn about.
    const gitops = await helm([
      'template',
      RELEASE,
      CHART,
      '--namespace',
      NS,
      ...VARIANTS['cert-manager'],
      '--set',
      'etcd.tls.generate=false',
    ]);
    expect(gitops.code).toBe(0);
    expect(gitops.stdout).not.toContain('WARNING');
    const cluster = await startFakeCluster();
    try {
      const online = await helm(
        ['template', RELEASE, CHART, '--namespace', NS, '--dry-run=server', '--disable-openapi-validation'],
        { kubeconfig: cluster.kubeconfig },
      );
      expect(online.code).toBe(0);
      expect(online.stdout).not.toContain('WARNING');
    } finally {
      await cluster.close();
    }
  });

  test('etcd.tls.generate=false: no etcd Secrets rendered; members and server use the Secrets of the fixed names', async () => {
    const r = await template(['--set', 'etcd.tls.generate=false']);
    expect(r.all('Secret').map((s) => s.metadata.name)).toEqual([`${FULLNAME}-tls`]);
    const sts = r.get('StatefulSet', ETCD);
    expect(sts.spec.template.spec.volumes.find((v: any) => v.name === 'tls').secret.secretName).toBe(
      `${ETCD}-server-tls`,
    );
    expect(secretFile(r, serverConfig(r).etcdCafile!).secretName).toBe(`${ETCD}-client-tls`);
    // Two renders are the same: nothing is generated.
    const again = await template(['--set', 'etcd.tls.generate=false']);
    expect(again.get('StatefulSet', ETCD)).toEqual(sts);
    const etcdChecksum = (x: Rendered) => x.deployment.spec.template.metadata.annotations['checksum/etcd-tls'];
    expect(etcdChecksum(again)).toBe(etcdChecksum(r));
  });
});

describe('bad values fail at template time (values.schema.json)', () => {
  test.each([
    [['--set', 'replicaCount=0'], "'/replicaCount'"],
    [['--set', 'tls.mode=bogus'], "'/tls/mode'"],
    [['--set', 'etcd.replicas=2'], "'/etcd/replicas'"],
    [['--set', 'etcd.external.endpoints={https://etcd-0.example.internal:2379}'], "'/etcd/external/secretName'"],
    [
      [
        '--set',
        'etcd.external.endpoints={http://etcd-0.example.internal:2379}',
        '--set',
        'etcd.external.secretName=etcd-client',
      ],
      "'/etcd/external/endpoints/0'",
    ],
    [
      ['--set', 'tls.mode=existingSecret', '--set', 'tls.existingSecret.name=corp-tls'],
      "'/tls/existingSecret/caBundle'",
    ],
    [['--set', 'tokenIssuer=http://platform.example.com'], "'/tokenIssuer'"],
    [['--set', 'image.pullPolicy=Sometimes'], "'/image/pullPolicy'"],
    [['--set', 'observability.verbosity=11'], "'/observability/verbosity'"],
    [['--set', 'rbac.virtualClusterNamespaces={*,vcluster-a}'], "'/rbac/virtualClusterNamespaces'"],
    [['--set', 'rbac.virtualClusterNamespaces={vcluster_a}'], "'/rbac/virtualClusterNamespaces'"],
    [['--set', 'encryptionAtRest.existingSecret=Platform_Keys'], "'/encryptionAtRest/existingSecret'"],
    [
      ['--set', 'observability.tracing.samplingRatePerMillion=1000001'],
      "'/observability/tracing/samplingRatePerMillion'",
    ],
    [['--set', 'observability.auditLog.policyConfigMap=Audit_Policy'], "'/observability/auditLog/policyConfigMap'"],
    [['--set', 'heap.limitPercent=0.75'], "'/heap/limitPercent'"],
    [['--set', 'heap.maxOldSpaceSizeMiB=-1'], "'/heap/maxOldSpaceSizeMiB'"],
    [['--set', 'heap.primaryReserveMiB=-1'], "'/heap/primaryReserveMiB'"],
    [['--set', 'workers=0'], "'/workers'"],
    [['--set', 'workers=65'], "'/workers'"],
    [['--set', 'workers=abc'], "'/workers'"],
    [['--set', 'workers=1.5'], "'/workers'"],
    [['--set', 'etcd.backup.keep=0'], "'/etcd/backup/keep'"],
    [['--set', 'etcd.backup.subPath=../etc'], "'/etcd/backup/subPath'"],
    [['--set', 'etcd.backup.schedule=daily'], "'/etcd/backup/schedule'"],
    [['--set-json', 'networkPolicy.apiServerPeers=[{"cidr":"10.0.0.0/8"}]'], "'/networkPolicy/apiServerPeers/0'"],
    [['--set', 'serviceMonitor.interval=often'], "'/serviceMonitor/interval'"],
    [['--set', 'etcd.tls.generate=no'], "'/etcd/tls/generate'"],
    [['--set', 'replicaCuont=3'], 'replicaCuont'],
  ])('%j is refused naming %s', async (args, named) => {
    const r = await helm(['template', RELEASE, CHART, '--namespace', NS, ...args]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("values don't meet the specifications of the schema");
    expect(r.stderr).toContain(named);
  });
});

describe('NOTES.txt', () => {
  test('tells the admin how to check the APIService and the group', async () => {
    const r = await helm(['install', RELEASE, CHART, '--namespace', NS, '--dry-run=client']);
    expect(r.code).toBe(0);
    const notes = r.stdout.slice(r.stdout.indexOf('NOTES:'));
    for (const line of [
      'kubectl get apiservice v1.management.platform.sh',
      'kubectl wait --for=condition=Available --timeout=180s apiservice/v1.management.platform.sh',
      'kubectl api-resources --api-group=management.platform.sh',
      'kubectl get sharedsecrets -A',
    ]) {
      expect(notes).toContain(line);
    }
    expect(notes).toContain(`helm test ${RELEASE} -n ${NS}`);
    expect(notes).toContain('(2 replica(s) with 1 worker(s) each; etcd: 1 member(s)');
  });

  test('by default says loudly that one etcd member is not highly available, that nothing is backed up, and which namespaces to list', async () => {
    const notesOf = async (args: string[]) => {
      const r = await helm(['install', RELEASE, CHART, '--namespace', NS, '--dry-run=client', ...args]);
      expect(r.code).toBe(0);
      return r.stdout.slice(r.stdout.indexOf('NOTES:'));
    };
    const defaults = await notesOf([]);
    expect(defaults).toContain('WARNING: etcd has ONE member: this install is NOT highly available.');
    expect(defaults).toContain('etcd is not backed up by the chart: set etcd.backup.enabled=true');
    expect(defaults).toContain("--set 'rbac.virtualClusterNamespaces={vcluster-a,vcluster-b}'");
    const ha = await notesOf(VARIANTS.ha);
    expect(ha).not.toContain('NOT highly available');
    expect(ha).not.toContain('rbac.virtualClusterNamespaces');
    const dayTwo = await notesOf([...VARIANTS['day-two'], '--set', 'encryptionAtRest.existingSecret=platform-keys']);
    expect(dayTwo).toContain(
      'etcd is backed up on the schedule "30 1 * * *" into PersistentVolumeClaim platform-backups',
    );
    expect(dayTwo).toContain('back up Secret platform-keys elsewhere');
    expect(dayTwo).not.toContain('not backed up');
    // An external etcd is the admin's to make highly available.
    expect(await notesOf(VARIANTS['external-etcd'])).not.toContain('NOT highly available');
  });

  test('says when the image names no registry (the nodes would look for it on Docker Hub), and not when it does', async () => {
    const notesOf = async (repository?: string) => {
      const set = repository ? ['--set', `image.repository=${repository}`] : [];
      const r = await helm(['install', RELEASE, CHART, '--namespace', NS, '--dry-run=client', ...set]);
      expect(r.code).toBe(0);
      return r.stdout.slice(r.stdout.indexOf('NOTES:'));
    };
    const warning = 'names no registry, so the nodes look for it on Docker Hub';
    expect(await notesOf()).toContain(`The image platform-management-api:0.1.0 ${warning}`);
    expect(await notesOf('myorg/platform-management-api')).toContain(warning);
    for (const withRegistry of [
      'registry.example.com/platform-management-api',
      'localhost:5000/pma',
      'localhost/pma',
    ]) {
      expect(await notesOf(withRegistry)).not.toContain(warning);
    }
  });

  test('says that kube configs cannot be issued when the server may read no connection Secret', async () => {
    const r = await helm([
      'install',
      RELEASE,
      CHART,
      '--namespace',
      NS,
      '--dry-run=client',
      '--set-json',
      'rbac.virtualClusterNamespaces=[]',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout.slice(r.stdout.indexOf('NOTES:'))).toContain(
      'rbac.virtualClusterNamespaces is empty (the default): the server may read no virtual cluster',
    );
  });
});
