/**
 * The admissionregistration.k8s.io/v1 webhook configurations this server reads from the host cluster (the fields
 * it uses, with kube's defaults), and the webhooks they hold in the order kube calls them: configurations sorted
 * by name, each configuration's webhooks in their order.
 */
import type { AdmissionOperation } from '../apimachinery/admission.js';

export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface RuleWithOperations {
  operations?: (AdmissionOperation | '*')[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: 'Cluster' | 'Namespaced' | '*';
}

export interface WebhookClientConfig {
  url?: string;
  service?: { namespace: string; name: string; path?: string; port?: number };
  /** Base64 PEM of the CA bundle that verifies the webhook's serving certificate; unset: the system roots. */
  caBundle?: string;
}

export interface MatchCondition {
  name: string;
  expression: string;
}

/** One webhook of either kind, with kube's defaults filled in. */
export interface Webhook {
  /** The configuration it comes from, and its own name. */
  configuration: string;
  name: string;
  clientConfig: WebhookClientConfig;
  rules: RuleWithOperations[];
  failurePolicy: 'Fail' | 'Ignore';
  matchPolicy: 'Exact' | 'Equivalent';
  namespaceSelector: LabelSelectorSpec;
  objectSelector: LabelSelectorSpec;
  sideEffects?: string;
  timeoutSeconds: number;
  admissionReviewVersions: string[];
  matchConditions: MatchCondition[];
  /** Mutating webhooks only. */
  reinvocationPolicy: 'Never' | 'IfNeeded';
}

export interface WebhookConfiguration {
  metadata: { name?: string; resourceVersion?: string };
  webhooks?: Partial<Webhook>[];
  [field: string]: unknown;
}

/** kube's default for timeoutSeconds (admissionregistration/v1 defaults). */
const DEFAULT_TIMEOUT_SECONDS = 10;

export function webhooksOf(configurations: WebhookConfiguration[]): Webhook[] {
  const sorted = [...configurations].sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1));
  return sorted.flatMap((config) =>
    (config.webhooks ?? []).map((hook): Webhook => ({
      configuration: config.metadata.name ?? '',
      name: hook.name ?? '',
      clientConfig: hook.clientConfig ?? {},
      rules: hook.rules ?? [],
      failurePolicy: hook.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
      matchPolicy: hook.matchPolicy === 'Exact' ? 'Exact' : 'Equivalent',
      namespaceSelector: hook.namespaceSelector ?? {},
      objectSelector: hook.objectSelector ?? {},
      sideEffects: hook.sideEffects,
      timeoutSeconds: hook.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
      admissionReviewVersions: hook.admissionReviewVersions ?? [],
      matchConditions: hook.matchConditions ?? [],
      reinvocationPolicy: hook.reinvocationPolicy === 'IfNeeded' ? 'IfNeeded' : 'Never',
    })),
  );
}
