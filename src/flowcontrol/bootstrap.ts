/**
 * kube's built-in configuration (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap, v1): the mandatory levels and
 * schemas (exempt for system:masters, catch-all last) and the suggested ones, as a kube-apiserver creates them in a
 * new cluster. Without a host cluster they are the configuration; with one, the host's objects are, and only the
 * mandatory ones the host lacks are supplied from here.
 *
 * Their uids are made from their names, so that the response headers stay the same from one start to the next.
 */
import { createHash } from 'node:crypto';
import {
  CATCH_ALL,
  EXEMPT,
  type FlowSchema,
  type PolicyRulesWithSubjects,
  type PriorityLevelConfiguration,
  type QueuingConfiguration,
  type ResourcePolicyRule,
  type Subject,
} from './types.js';

const ALL_RESOURCES: ResourcePolicyRule = {
  verbs: ['*'],
  apiGroups: ['*'],
  resources: ['*'],
  clusterScope: true,
  namespaces: ['*'],
};
const ALL_NON_RESOURCES = { verbs: ['*'], nonResourceURLs: ['*'] };

function uidOf(kind: string, name: string): string {
  const h = createHash('sha256').update(`bootstrap/${kind}/${name}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function limited(
  name: string,
  nominalConcurrencyShares: number,
  lendablePercent: number,
  queuing?: QueuingConfiguration,
): PriorityLevelConfiguration {
  return {
    metadata: { name, uid: uidOf('prioritylevelconfigurations', name) },
    spec: {
      type: 'Limited',
      limited: {
        nominalConcurrencyShares,
        lendablePercent,
        limitResponse: queuing ? { type: 'Queue', queuing } : { type: 'Reject' },
      },
    },
  };
}

function schema(
  name: string,
  level: string,
  matchingPrecedence: number,
  distinguisher: 'ByUser' | 'ByNamespace' | undefined,
  ...rules: PolicyRulesWithSubjects[]
): FlowSchema {
  return {
    metadata: { name, uid: uidOf('flowschemas', name) },
    spec: {
      priorityLevelConfiguration: { name: level },
      matchingPrecedence,
      ...(distinguisher ? { distinguisherMethod: { type: distinguisher } } : {}),
      rules,
    },
  };
}

const users = (...names: string[]): Subject[] => names.map((name) => ({ kind: 'User', user: { name } }));
const groups = (...names: string[]): Subject[] => names.map((name) => ({ kind: 'Group', group: { name } }));
const kubeSystemServiceAccounts = (...names: string[]): Subject[] =>
  names.map((name) => ({ kind: 'ServiceAccount', serviceAccount: { namespace: 'kube-system', name } }));
const everything = (subjects: Subject[]): PolicyRulesWithSubjects => ({
  subjects,
  resourceRules: [ALL_RESOURCES],
  nonResourceRules: [ALL_NON_RESOURCES],
});
const getCreateUpdate = (apiGroups: string[], resources: string[]): ResourcePolicyRule => ({
  verbs: ['get', 'create', 'update'],
  apiGroups,
  resources,
  namespaces: ['*'],
});

export const MANDATORY_PRIORITY_LEVELS: PriorityLevelConfiguration[] = [
  {
    metadata: { name: EXEMPT, uid: uidOf('prioritylevelconfigurations', EXEMPT) },
    spec: { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } },
  },
  limited(CATCH_ALL, 5, 0),
];

export const MANDATORY_FLOW_SCHEMAS: FlowSchema[] = [
  schema(EXEMPT, EXEMPT, 1, undefined, everything(groups('system:masters'))),
  schema(CATCH_ALL, CATCH_ALL, 10000, 'ByUser', everything(groups('system:unauthenticated', 'system:authenticated'))),
];

export const SUGGESTED_PRIORITY_LEVELS: PriorityLevelConfiguration[] = [
  limited('node-high', 40, 25, { queues: 64, handSize: 6, queueLengthLimit: 50 }),
  limited('system', 30, 33, { queues: 64, handSize: 6, queueLengthLimit: 50 }),
  limited('leader-election', 10, 0, { queues: 16, handSize: 4, queueLengthLimit: 50 }),
  limited('workload-high', 40, 50, { queues: 128, handSize: 6, queueLengthLimit: 50 }),
  limited('workload-low', 100, 90, { queues: 128, handSize: 6, queueLengthLimit: 50 }),
  limited('global-default', 20, 50, { queues: 128, handSize: 6, queueLengthLimit: 50 }),
];

export const SUGGESTED_FLOW_SCHEMAS: FlowSchema[] = [
  schema('system-nodes', 'system', 500, 'ByUser', everything(groups('system:nodes'))),
  schema('system-node-high', 'node-high', 400, 'ByUser', {
    subjects: groups('system:nodes'),
    resourceRules: [
      { verbs: ['*'], apiGroups: [''], resources: ['nodes', 'nodes/status'], clusterScope: true },
      { verbs: ['*'], apiGroups: ['coordination.k8s.io'], resources: ['leases'], namespaces: ['*'] },
    ],
  }),
  schema('probes', EXEMPT, 2, undefined, {
    subjects: groups('system:unauthenticated', 'system:authenticated'),
    nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/readyz', '/livez'] }],
  }),
  schema('system-leader-election', 'leader-election', 100, 'ByUser', {
    subjects: [...users('system:kube-controller-manager', 'system:kube-scheduler'), ...kubeSystemServiceAccounts('*')],
    resourceRules: [getCreateUpdate(['coordination.k8s.io'], ['leases'])],
  }),
  schema('endpoint-controller', 'workload-high', 150, 'ByUser', {
    subjects: [...users('system:kube-controller-manager'), ...kubeSystemServiceAccounts('endpoint-controller')],
    resourceRules: [getCreateUpdate([''], ['endpoints'])],
  }),
  schema('workload-leader-election', 'leader-election', 200, 'ByUser', {
    subjects: kubeSystemServiceAccounts('*'),
    resourceRules: [getCreateUpdate(['coordination.k8s.io'], ['leases'])],
  }),
  schema(
    'kube-controller-manager',
    'workload-high',
    800,
    'ByNamespace',
    everything(users('system:kube-controller-manager')),
  ),
  schema('kube-scheduler', 'workload-high', 800, 'ByNamespace', everything(users('system:kube-scheduler'))),
  schema(
    'kube-system-service-accounts',
    'workload-high',
    900,
    'ByNamespace',
    everything(kubeSystemServiceAccounts('*')),
  ),
  schema('service-accounts', 'workload-low', 9000, 'ByUser', everything(groups('system:serviceaccounts'))),
  schema(
    'global-default',
    'global-default',
    9900,
    'ByUser',
    everything(groups('system:unauthenticated', 'system:authenticated')),
  ),
];
