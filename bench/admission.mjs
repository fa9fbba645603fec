#!/usr/bin/env node
// What admission costs one write, in the server's own process and code (dist/), without the network: the chain
// every store write goes through, built as the server builds it with a host cluster, its informers' copies given:
//   none:        no admission (the server without a host cluster)
//   lifecycle:   NamespaceLifecycle (the namespace in the informer's copy), no webhook, no policy
//   one policy:  the same and one ValidatingAdmissionPolicy with one binding: two CEL validations and a variable
// Each row runs CREATE then UPDATE attributes of a bench SharedSecret (the object the write benchmark writes)
// through admit() and validate(), a closed loop for --seconds, rows taken in turn in --slices slices. Printed:
// microseconds per write (mean over the run, p99 of slice means) and the ratio to the server's CPU per create
// measured by bench/write-path.mjs (given with --create-cpu-us; default 1000 µs: 800-1000 creates/s at 0.9 core).
// Run by hand: `npm run build && node bench/admission.mjs`.
import { parseArgs } from 'node:util';
import { dist, f2, sharedSecret } from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    slices: { type: 'string', default: '6' },
    'create-cpu-us': { type: 'string', default: '1000' },
  },
});
const load = (path) => import(new URL(path, dist).href);
const { AdmissionChain } = await load('admission/chain.js');
const { namespaceLifecycle } = await load('admission/namespacelifecycle.js');
const { mutatingWebhooks, validatingWebhooks } = await load('admission/webhooks.js');
const { validatingAdmissionPolicy } = await load('admission/policy.js');

const namespace = {
  metadata: { name: 'bench', labels: { 'kubernetes.io/metadata.name': 'bench' } },
  status: { phase: 'Active' },
};
const namespaces = {
  waitForSync: async () => true,
  cached: () => namespace,
  live: async () => namespace,
};
const noWebhooks = {
  ready: async () => true,
  webhooks: () => [],
  namespaceLabels: async () => namespace.metadata.labels,
  matchConditions: async () => true,
  log: () => {},
};
const policy = {
  metadata: { name: 'bench-policy' },
  spec: {
    failurePolicy: 'Fail',
    matchConstraints: {
      resourceRules: [
        {
          operations: ['CREATE', 'UPDATE'],
          apiGroups: ['management.platform.sh'],
          apiVersions: ['v1'],
          resources: ['sharedsecrets'],
        },
      ],
    },
    variables: [{ name: 'team', expression: "has(object.metadata.labels) ? object.metadata.labels['team'] : ''" }],
    validations: [
      { expression: 'object.spec.displayName.size() < 200', message: 'displayName is too long' },
      { expression: "variables.team.startsWith('team-')", message: 'team label must start with team-' },
    ],
  },
};
const binding = {
  metadata: { name: 'bench-binding' },
  spec: { policyName: 'bench-policy', validationActions: ['Deny'] },
};
const policies = (list) => ({
  ready: async () => true,
  policies: () => list,
  bindings: () => (list.length ? [binding] : []),
  namespace: async () => namespace,
  params: async () => [],
});

const chains = {
  none: undefined,
  lifecycle: new AdmissionChain([
    namespaceLifecycle(namespaces),
    mutatingWebhooks(noWebhooks),
    validatingAdmissionPolicy(policies([])),
    validatingWebhooks(noWebhooks),
  ]),
  'one policy': new AdmissionChain([
    namespaceLifecycle(namespaces),
    mutatingWebhooks(noWebhooks),
    validatingAdmissionPolicy(policies([policy])),
    validatingWebhooks(noWebhooks),
  ]),
};

const object = sharedSecret(7);
const attrsFor = (operation) => ({
  operation,
  group: 'management.platform.sh',
  version: 'v1',
  kind: 'SharedSecret',
  resource: 'sharedsecrets',
  subresource: '',
  namespace: 'bench',
  name: object.metadata.name,
  object: structuredClone(object),
  oldObject: operation === 'UPDATE' ? structuredClone(object) : undefined,
  user: { name: 'bench', groups: ['system:authenticated'] },
  dryRun: false,
  warnings: [],
  auditAnnotations: {},
});

async function write(chain, operation) {
  const attrs = attrsFor(operation);
  if (!chain) return;
  await chain.admit(attrs);
  await chain.validate(attrs);
}

const results = Object.fromEntries(Object.keys(chains).map((k) => [k, { writes: 0, ms: 0, sliceMeans: [] }]));
const sliceMs = (Number(args.seconds) * 1000) / Number(args.slices);
for (let slice = 0; slice < Number(args.slices); slice++) {
  for (const [label, chain] of Object.entries(chains)) {
    const r = results[label];
    const t0 = performance.now();
    let n = 0;
    while (performance.now() - t0 < sliceMs / Object.keys(chains).length) {
      await write(chain, n % 2 ? 'UPDATE' : 'CREATE');
      n++;
    }
    const ms = performance.now() - t0;
    r.writes += n;
    r.ms += ms;
    r.sliceMeans.push((ms * 1000) / n);
  }
}

const base = (results.none.ms * 1000) / results.none.writes;
const createCpu = Number(args['create-cpu-us']);
console.log(
  `Admission per write (CREATE and UPDATE alternating), ${args.seconds} s in ${args.slices} slices, dist ${dist.pathname}\n`,
);
console.log(
  '| Chain | writes | µs per write (mean) | slowest slice mean | above none | share of a create (≈' +
    createCpu +
    ' µs CPU) |',
);
console.log('|---|---|---|---|---|---|');
for (const [label, r] of Object.entries(results)) {
  const mean = (r.ms * 1000) / r.writes;
  const above = mean - base;
  console.log(
    `| ${label} | ${r.writes} | ${f2(mean)} | ${f2(Math.max(...r.sliceMeans))} | ${f2(above)} | ${f2((100 * above) / createCpu)}% |`,
  );
}
