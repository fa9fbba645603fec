/**
 * Admission as configured in the host cluster: the enabled plugins, fed by informers on the host (namespaces, and
 * the admissionregistration.k8s.io/v1 webhook configurations, policies and bindings) and by
 * --admission-control-config-file (the webhooks' credentials). Only with a host cluster; the informers run until
 * stop().
 */
import type { HostCluster } from '../host/cluster.js';
import { HostInformer, type HostObject } from '../host/informer.js';
import { HostClusterError } from '../host/cluster.js';
import { AdmissionChain } from './chain.js';
import type { AdmissionConfiguration } from './config.js';
import { matchConditionsHold } from './matchconditions.js';
import { NAMESPACE_LIFECYCLE, namespaceLifecycle, type Namespace, type NamespaceSource } from './namespacelifecycle.js';
import { hostParams } from './params.js';
import type { AdmissionPlugin } from './plugin.js';
import {
  VALIDATING_ADMISSION_POLICY,
  validatingAdmissionPolicy,
  type PolicySources,
  type ValidatingAdmissionPolicy,
  type ValidatingAdmissionPolicyBinding,
} from './policy.js';
import { webhooksOf, type WebhookConfiguration } from './webhookconfig.js';
import {
  MUTATING_ADMISSION_WEBHOOK,
  mutatingWebhooks,
  VALIDATING_ADMISSION_WEBHOOK,
  validatingWebhooks,
  type WebhookSources,
} from './webhooks.js';

const ADMISSIONREGISTRATION = '/apis/admissionregistration.k8s.io/v1';

type Log = (msg: string, fields?: Record<string, unknown>) => void;

export interface HostAdmission {
  chain: AdmissionChain;
  stop(): void;
}

export function startHostAdmission(
  host: HostCluster,
  enabled: string[],
  config: AdmissionConfiguration,
  log: Log,
): HostAdmission {
  const running = new AbortController();
  const informer = <T extends HostObject>(what: string, path: string) => {
    const i = new HostInformer<T>(host, { what, path, log });
    void i.run(running.signal);
    return i;
  };
  let namespaces: ReturnType<typeof hostNamespaces> | undefined;
  const namespaceSource = () =>
    (namespaces ??= hostNamespaces(host, informer<Namespace>('namespaces', '/api/v1/namespaces')));
  const webhookSources = (what: string, plugin: string) => {
    const configurations = informer<WebhookConfiguration>(what, `${ADMISSIONREGISTRATION}/${what}`);
    const sources: WebhookSources = {
      ready: (timeoutMs) => configurations.waitForSync(timeoutMs),
      webhooks: () => webhooksOf(configurations.list()),
      namespaceLabels: async (name) => (await namespaceSource().get(name))?.metadata.labels ?? undefined,
      matchConditions: async (hook, attrs) => matchConditionsHold(hook, attrs),
      credentials: config.webhookCredentials.get(plugin),
      log,
    };
    return sources;
  };
  const policySources = (): PolicySources => {
    const policies = informer<ValidatingAdmissionPolicy>(
      'validatingadmissionpolicies',
      `${ADMISSIONREGISTRATION}/validatingadmissionpolicies`,
    );
    const bindings = informer<ValidatingAdmissionPolicyBinding>(
      'validatingadmissionpolicybindings',
      `${ADMISSIONREGISTRATION}/validatingadmissionpolicybindings`,
    );
    return {
      ready: async (timeoutMs) => (await policies.waitForSync(timeoutMs)) && bindings.waitForSync(timeoutMs),
      policies: () => policies.list(),
      bindings: () => bindings.list(),
      namespace: (name) => namespaceSource().get(name),
      params: hostParams(host),
    };
  };
  const plugins: AdmissionPlugin[] = [];
  for (const name of enabled) {
    if (name === NAMESPACE_LIFECYCLE) plugins.push(namespaceLifecycle(namespaceSource()));
    if (name === MUTATING_ADMISSION_WEBHOOK)
      plugins.push(mutatingWebhooks(webhookSources('mutatingwebhookconfigurations', name)));
    if (name === VALIDATING_ADMISSION_POLICY) plugins.push(validatingAdmissionPolicy(policySources()));
    if (name === VALIDATING_ADMISSION_WEBHOOK)
      plugins.push(validatingWebhooks(webhookSources('validatingwebhookconfigurations', name)));
  }
  return { chain: new AdmissionChain(plugins), stop: () => running.abort() };
}

/** The namespace informer, and the host asked directly for one it has not seen. */
function hostNamespaces(
  host: HostCluster,
  informer: HostInformer<Namespace>,
): NamespaceSource & {
  get(name: string): Promise<Namespace | undefined>;
} {
  const live = async (name: string) => {
    try {
      return await host.request<Namespace>(
        `get namespace ${name}`,
        'GET',
        `/api/v1/namespaces/${encodeURIComponent(name)}`,
      );
    } catch (err) {
      if (err instanceof HostClusterError && err.code === 404) return undefined;
      throw err;
    }
  };
  return {
    waitForSync: (timeoutMs) => informer.waitForSync(timeoutMs),
    cached: (name) => informer.get(name),
    live,
    get: async (name) => informer.get(name) ?? (await live(name)),
  };
}
