/**
 * flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations, as the host cluster serves them, and
 * the checks kube's API validation makes of them. The host validates what it stores, so a bad object should never
 * arrive; one that does (another version's defaults, a hand-made stand-in) is left out with a warning rather than
 * trusted, and a FlowSchema naming it then has no level (see controller.ts): never a crash.
 */

export const FLOWCONTROL_GROUP = 'flowcontrol.apiserver.k8s.io';
export const FLOWCONTROL_PATH = `/apis/${FLOWCONTROL_GROUP}/v1`;

export interface ObjectMeta {
  name?: string;
  uid?: string;
  resourceVersion?: string;
  [field: string]: unknown;
}

export interface Subject {
  kind: 'User' | 'Group' | 'ServiceAccount';
  user?: { name: string };
  group?: { name: string };
  serviceAccount?: { namespace: string; name: string };
}

export interface ResourcePolicyRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  clusterScope?: boolean;
  namespaces?: string[];
}

export interface NonResourcePolicyRule {
  verbs: string[];
  nonResourceURLs: string[];
}

export interface PolicyRulesWithSubjects {
  subjects: Subject[];
  resourceRules?: ResourcePolicyRule[];
  nonResourceRules?: NonResourcePolicyRule[];
}

export interface FlowSchema {
  metadata: ObjectMeta;
  spec: {
    priorityLevelConfiguration: { name: string };
    matchingPrecedence?: number;
    distinguisherMethod?: { type: 'ByUser' | 'ByNamespace' };
    rules?: PolicyRulesWithSubjects[];
  };
  [field: string]: unknown;
}

export interface QueuingConfiguration {
  queues: number;
  handSize: number;
  queueLengthLimit: number;
}

export interface LimitResponse {
  type: 'Queue' | 'Reject';
  queuing?: QueuingConfiguration;
}

export interface PriorityLevelConfiguration {
  metadata: ObjectMeta;
  spec: {
    type: 'Exempt' | 'Limited';
    limited?: {
      nominalConcurrencyShares?: number;
      limitResponse?: LimitResponse;
      lendablePercent?: number;
      borrowingLimitPercent?: number;
    };
    exempt?: { nominalConcurrencyShares?: number; lendablePercent?: number };
  };
  [field: string]: unknown;
}

/** kube's defaults (v1): a matchingPrecedence of 1000, 30 shares, and queuing of 64 queues, hands of 8, 50 long. */
export const DEFAULT_MATCHING_PRECEDENCE = 1000;
export const DEFAULT_NOMINAL_CONCURRENCY_SHARES = 30;
export const DEFAULT_QUEUING: QueuingConfiguration = { queues: 64, handSize: 8, queueLengthLimit: 50 };

/** Names of the mandatory objects, which the server supplies when the host lacks them. */
export const EXEMPT = 'exempt';
export const CATCH_ALL = 'catch-all';

const MAX_HAND_SIZE = 15;

/** What is wrong with a FlowSchema, one entry a field ([] when nothing). */
export function validateFlowSchema(fs: FlowSchema): string[] {
  const errs: string[] = [];
  const spec = fs.spec;
  if (typeof fs.metadata?.name !== 'string' || !fs.metadata.name) return ['metadata.name: Required value'];
  if (!spec || typeof spec !== 'object') return ['spec: Required value'];
  if (typeof spec.priorityLevelConfiguration?.name !== 'string' || !spec.priorityLevelConfiguration.name)
    errs.push('spec.priorityLevelConfiguration.name: Required value');
  const precedence = spec.matchingPrecedence ?? DEFAULT_MATCHING_PRECEDENCE;
  if (!Number.isInteger(precedence) || precedence < 1 || precedence > 10000)
    errs.push(`spec.matchingPrecedence: Invalid value: ${JSON.stringify(precedence)}: must be between 1 and 10000`);
  const method = spec.distinguisherMethod?.type;
  if (spec.distinguisherMethod && method !== 'ByUser' && method !== 'ByNamespace')
    errs.push(
      `spec.distinguisherMethod.type: Unsupported value: ${JSON.stringify(method)}: supported values: "ByNamespace", "ByUser"`,
    );
  if (spec.rules !== undefined && !Array.isArray(spec.rules)) errs.push('spec.rules: must be a list');
  (Array.isArray(spec.rules) ? spec.rules : []).forEach((rule, i) =>
    errs.push(...validateRule(rule, `spec.rules[${i}]`)),
  );
  return errs;
}

function validateRule(rule: PolicyRulesWithSubjects, at: string): string[] {
  const errs: string[] = [];
  if (!Array.isArray(rule?.subjects) || !rule.subjects.length) return [`${at}.subjects: Required value`];
  rule.subjects.forEach((s, i) => {
    const ok =
      (s?.kind === 'User' && typeof s.user?.name === 'string' && s.user.name !== '') ||
      (s?.kind === 'Group' && typeof s.group?.name === 'string' && s.group.name !== '') ||
      (s?.kind === 'ServiceAccount' &&
        typeof s.serviceAccount?.name === 'string' &&
        typeof s.serviceAccount.namespace === 'string' &&
        s.serviceAccount.name !== '' &&
        s.serviceAccount.namespace !== '');
    if (!ok)
      errs.push(
        `${at}.subjects[${i}]: Invalid value: a subject is a User, Group or ServiceAccount with its name (and a ServiceAccount's namespace)`,
      );
  });
  const resourceRules = rule.resourceRules ?? [];
  const nonResourceRules = rule.nonResourceRules ?? [];
  if (!Array.isArray(resourceRules) || !Array.isArray(nonResourceRules))
    return [...errs, `${at}: resourceRules and nonResourceRules must be lists`];
  if (!resourceRules.length && !nonResourceRules.length)
    errs.push(`${at}: Required value: at least one of resourceRules and nonResourceRules has to be non-empty`);
  resourceRules.forEach((r, i) => {
    const where = `${at}.resourceRules[${i}]`;
    for (const field of ['verbs', 'apiGroups', 'resources'] as const)
      if (!strings(r?.[field])) errs.push(`${where}.${field}: Required value`);
    if (r?.namespaces !== undefined && !Array.isArray(r.namespaces)) errs.push(`${where}.namespaces: must be a list`);
    if (!r?.clusterScope && !r?.namespaces?.length)
      errs.push(`${where}.namespaces: Required value: resource rules that are not cluster scoped need namespaces`);
  });
  nonResourceRules.forEach((r, i) => {
    const where = `${at}.nonResourceRules[${i}]`;
    if (!strings(r?.verbs)) errs.push(`${where}.verbs: Required value`);
    if (!strings(r?.nonResourceURLs)) errs.push(`${where}.nonResourceURLs: Required value`);
  });
  return errs;
}

/** What is wrong with a PriorityLevelConfiguration ([] when nothing). */
export function validatePriorityLevel(pl: PriorityLevelConfiguration): string[] {
  const errs: string[] = [];
  const spec = pl.spec;
  if (typeof pl.metadata?.name !== 'string' || !pl.metadata.name) return ['metadata.name: Required value'];
  if (!spec || typeof spec !== 'object') return ['spec: Required value'];
  if (spec.type === 'Exempt') {
    if (pl.metadata.name !== EXEMPT) errs.push('spec.type: Invalid value: "Exempt": only the level "exempt" is exempt');
    errs.push(...percent(spec.exempt?.lendablePercent, 'spec.exempt.lendablePercent'));
    errs.push(...shares(spec.exempt?.nominalConcurrencyShares, 'spec.exempt.nominalConcurrencyShares', 0));
    return errs;
  }
  if (spec.type !== 'Limited')
    return [`spec.type: Unsupported value: ${JSON.stringify(spec.type)}: supported values: "Exempt", "Limited"`];
  if (pl.metadata.name === EXEMPT) errs.push('spec.type: Invalid value: "Limited": the level "exempt" must be Exempt');
  const limited = spec.limited;
  if (!limited || typeof limited !== 'object') return [...errs, 'spec.limited: Required value'];
  errs.push(...shares(limited.nominalConcurrencyShares, 'spec.limited.nominalConcurrencyShares', 0));
  errs.push(...percent(limited.lendablePercent, 'spec.limited.lendablePercent'));
  const borrowing = limited.borrowingLimitPercent;
  if (borrowing !== undefined && (!Number.isInteger(borrowing) || borrowing < 0))
    errs.push(`spec.limited.borrowingLimitPercent: Invalid value: ${JSON.stringify(borrowing)}: must be 0 or more`);
  const response = limited.limitResponse;
  if (response && response.type !== 'Queue' && response.type !== 'Reject')
    errs.push(
      `spec.limited.limitResponse.type: Unsupported value: ${JSON.stringify(response.type)}: supported values: "Queue", "Reject"`,
    );
  if (response?.type === 'Queue') errs.push(...validateQueuing({ ...DEFAULT_QUEUING, ...response.queuing }));
  return errs;
}

function validateQueuing(q: QueuingConfiguration): string[] {
  const errs: string[] = [];
  const at = 'spec.limited.limitResponse.queuing';
  const positive = (v: unknown) => Number.isInteger(v) && (v as number) > 0;
  if (!positive(q.queues)) errs.push(`${at}.queues: Invalid value: ${JSON.stringify(q.queues)}: must be positive`);
  if (!positive(q.handSize))
    errs.push(`${at}.handSize: Invalid value: ${JSON.stringify(q.handSize)}: must be positive`);
  else if (q.handSize > q.queues || q.handSize > MAX_HAND_SIZE)
    errs.push(
      `${at}.handSize: Invalid value: ${q.handSize}: must be at most queues (${q.queues}) and at most ${MAX_HAND_SIZE}`,
    );
  if (!positive(q.queueLengthLimit))
    errs.push(`${at}.queueLengthLimit: Invalid value: ${JSON.stringify(q.queueLengthLimit)}: must be positive`);
  return errs;
}

function percent(v: unknown, at: string): string[] {
  if (v === undefined) return [];
  return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 100
    ? []
    : [`${at}: Invalid value: ${JSON.stringify(v)}: must be between 0 and 100, inclusive`];
}

function shares(v: unknown, at: string, min: number): string[] {
  if (v === undefined) return [];
  return Number.isInteger(v) && (v as number) >= min
    ? []
    : [`${at}: Invalid value: ${JSON.stringify(v)}: must be ${min} or more`];
}

function strings(v: unknown): boolean {
  return Array.isArray(v) && v.length > 0 && v.every((s) => typeof s === 'string');
}

/** The queuing of a Limited level that queues, with kube's defaults; undefined when it rejects (or is exempt). */
export function queuingOf(pl: PriorityLevelConfiguration): QueuingConfiguration | undefined {
  const response = pl.spec.limited?.limitResponse;
  if (pl.spec.type !== 'Limited' || response?.type !== 'Queue') return undefined;
  return { ...DEFAULT_QUEUING, ...response.queuing };
}
