/**
 * MutatingAdmissionWebhook and ValidatingAdmissionWebhook, as k8s.io/apiserver's webhook plugins: the host
 * cluster's webhook configurations decide which webhooks a write is sent to (webhookmatch.ts, then
 * matchConditions); each gets an AdmissionReview (v1, or v1beta1 when that is all it accepts). Mutating webhooks
 * run one after the other, their JSON patches applied in turn (the kind's defaulting and validation come after
 * them), and those with reinvocationPolicy IfNeeded run once more when a later one changed the object; validating
 * webhooks run in parallel on the object as it will be stored. A denial answers as kube does (`admission webhook
 * "<name>" denied the request: <message>`, the webhook's code); a webhook that cannot be called fails the request
 * under failurePolicy Fail (500) and is skipped under Ignore. Dry runs reach only webhooks without side effects.
 */
import { randomUUID } from 'node:crypto';
import { ADMISSION_READY_TIMEOUT_MS, admissionForbidden, type AdmissionAttributes } from '../apimachinery/admission.js';
import { jsonEqual } from '../apimachinery/equality.js';
import { applyJsonPatch } from '../apimachinery/patch.js';
import * as errors from '../apimachinery/status.js';
import { isPlainObject } from '../apimachinery/types.js';
import type { UserCredentials } from '../host/kubeconfigfile.js';
import type { AdmissionPlugin } from './plugin.js';
import { callWebhook, WebhookCallError } from './webhookclient.js';
import { inSpan } from '../tracing.js';
import type { Webhook } from './webhookconfig.js';
import { matchesNamespaceSelector, matchesObjectSelector, matchesRules } from './webhookmatch.js';

export const MUTATING_ADMISSION_WEBHOOK = 'MutatingAdmissionWebhook';
export const VALIDATING_ADMISSION_WEBHOOK = 'ValidatingAdmissionWebhook';

export interface WebhookSources {
  /** Resolves false when the configurations have not been listed once within `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  /** The webhooks of the configurations the host has now, in kube's order. */
  webhooks(): Webhook[];
  namespaceLabels(name: string): Promise<Record<string, string> | undefined>;
  /** matchConditions: true to call, false to skip; throws when one cannot be evaluated. */
  matchConditions(hook: Webhook, attrs: AdmissionAttributes): Promise<boolean>;
  /** What this server presents to a webhook's host (--admission-control-config-file); undefined: nothing. */
  credentials?: (url: URL) => UserCredentials | undefined;
  log(msg: string, fields?: Record<string, unknown>): void;
}

export function mutatingWebhooks(sources: WebhookSources): AdmissionPlugin {
  return {
    name: MUTATING_ADMISSION_WEBHOOK,
    operations: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'],
    async admit(attrs: AdmissionAttributes): Promise<void> {
      const hooks = await relevant(sources, attrs);
      // The index of the last webhook that changed the object: IfNeeded webhooks before it run again.
      let lastChange = -1;
      for (const [i, hook] of hooks.entries()) if (await mutate(hook, attrs, sources)) lastChange = i;
      for (const [i, hook] of hooks.entries()) {
        if (i >= lastChange) break;
        if (hook.reinvocationPolicy === 'IfNeeded') await mutate(hook, attrs, sources);
      }
    },
  };
}

export function validatingWebhooks(sources: WebhookSources): AdmissionPlugin {
  return {
    name: VALIDATING_ADMISSION_WEBHOOK,
    operations: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'],
    async validate(attrs: AdmissionAttributes): Promise<void> {
      const hooks = await relevant(sources, attrs);
      const outcomes = await Promise.allSettled(hooks.map((hook) => review(hook, attrs, sources, false)));
      // The first refusal in the webhooks' order (kube answers whichever comes back first).
      for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
    },
  };
}

/** The webhooks to call for this request, in order. */
async function relevant(sources: WebhookSources, attrs: AdmissionAttributes): Promise<Webhook[]> {
  // Without the configurations, no webhook would be called: refuse rather than let the write through unchecked.
  if (!(await sources.ready(ADMISSION_READY_TIMEOUT_MS)))
    throw admissionForbidden(attrs, 'not yet ready to handle request');
  const out: Webhook[] = [];
  for (const hook of sources.webhooks()) {
    if (!matchesRules(hook, attrs)) continue;
    if (!(await matchesNamespaceSelector(hook, attrs, (ns) => sources.namespaceLabels(ns)))) continue;
    if (!matchesObjectSelector(hook, attrs)) continue;
    if (hook.matchConditions.length && !(await conditionsHold(hook, attrs, sources))) continue;
    out.push(hook);
  }
  return out;
}

/** kube's matchconditions.Matcher: an error fails closed (403) under Fail, and skips the webhook under Ignore. */
async function conditionsHold(hook: Webhook, attrs: AdmissionAttributes, sources: WebhookSources): Promise<boolean> {
  try {
    return await sources.matchConditions(hook, attrs);
  } catch (err) {
    if (hook.failurePolicy === 'Ignore') return false;
    throw admissionForbidden(attrs, (err as Error).message);
  }
}

/** Calls a mutating webhook and applies its patch; true when the object changed. */
async function mutate(hook: Webhook, attrs: AdmissionAttributes, sources: WebhookSources): Promise<boolean> {
  const answer = await review(hook, attrs, sources, true);
  if (!answer?.patch || !attrs.object) return false;
  let patched: unknown;
  try {
    const operations = JSON.parse(Buffer.from(answer.patch, 'base64').toString());
    patched = applyJsonPatch(structuredClone(attrs.object), operations);
  } catch (err) {
    throw errors.internalError(new Error(`admission webhook ${JSON.stringify(hook.name)}: ${(err as Error).message}`));
  }
  if (!isPlainObject(patched))
    throw errors.internalError(new Error(`admission webhook ${JSON.stringify(hook.name)} patched the object away`));
  if (jsonEqual(patched, attrs.object)) return false;
  // In place: the store holds this object.
  const object = attrs.object as Record<string, unknown>;
  for (const key of Object.keys(object)) delete object[key];
  Object.assign(object, patched);
  return true;
}

interface ReviewAnswer {
  allowed: boolean;
  patch?: string;
  warnings: string[];
  /** The webhook's Status, for a denial. */
  result?: unknown;
  auditAnnotations: Record<string, string>;
}

/**
 * One call: the AdmissionReview out, the answer checked as kube's VerifyAdmissionResponse does. Resolves with the
 * answer of an allowing webhook (or undefined when an unreachable one is ignored); throws the request's error.
 */
function review(
  hook: Webhook,
  attrs: AdmissionAttributes,
  sources: WebhookSources,
  mutating: boolean,
): Promise<ReviewAnswer | undefined> {
  // kube's span of a webhook call (admission/plugin/webhook/{mutating,validating}/dispatcher.go).
  const attributes = {
    configuration: hook.configuration,
    webhook: hook.name,
    resource: attrs.resource,
    subresource: attrs.subresource,
    operation: attrs.operation,
  };
  return inSpan(mutating ? 'Call mutating webhook' : 'Call validating webhook', attributes, () =>
    callOnce(hook, attrs, sources, mutating),
  );
}

async function callOnce(
  hook: Webhook,
  attrs: AdmissionAttributes,
  sources: WebhookSources,
  mutating: boolean,
): Promise<ReviewAnswer | undefined> {
  if (attrs.dryRun && hook.sideEffects !== 'None' && hook.sideEffects !== 'NoneOnDryRun')
    throw errors.badRequest(`admission webhook ${JSON.stringify(hook.name)} does not support dry run`);
  let answer: ReviewAnswer;
  try {
    const version = reviewVersion(hook);
    const uid = randomUUID();
    const review = admissionReview(version, uid, attrs);
    const response = await callWebhook(hook.clientConfig, review, hook.timeoutSeconds, sources.credentials);
    answer = verifiedResponse(version, uid, response, mutating);
  } catch (err) {
    if (!(err instanceof WebhookCallError)) throw err;
    const failure = `failed calling webhook ${JSON.stringify(hook.name)}: ${err.message}`;
    if (hook.failurePolicy === 'Ignore') {
      sources.log('failed calling webhook, failing open', { webhook: hook.name, error: err.message });
      return undefined;
    }
    sources.log('failed calling webhook, failing closed', { webhook: hook.name, error: err.message });
    throw errors.internalError(new Error(failure));
  }
  attrs.warnings.push(...answer.warnings);
  // kube's AddAnnotation: each key `<webhook>/<key>`, the first value set kept.
  for (const [key, value] of Object.entries(answer.auditAnnotations))
    attrs.auditAnnotations[`${hook.name}/${key}`] ??= value;
  if (!answer.allowed) throw denial(hook, answer.result);
  return answer;
}

function reviewVersion(hook: Webhook): 'v1' | 'v1beta1' {
  for (const version of hook.admissionReviewVersions) if (version === 'v1' || version === 'v1beta1') return version;
  throw new WebhookCallError('webhook does not accept known AdmissionReview versions (v1, v1beta1)');
}

function admissionReview(version: string, uid: string, attrs: AdmissionAttributes): unknown {
  const kind = { group: attrs.group, version: attrs.version, kind: attrs.kind };
  const resource = { group: attrs.group, version: attrs.version, resource: attrs.resource };
  return {
    apiVersion: `admission.k8s.io/${version}`,
    kind: 'AdmissionReview',
    request: {
      uid,
      kind,
      resource,
      ...(attrs.subresource && { subResource: attrs.subresource }),
      requestKind: kind,
      requestResource: resource,
      ...(attrs.subresource && { requestSubResource: attrs.subresource }),
      ...(attrs.name && { name: attrs.name }),
      ...(attrs.namespace && { namespace: attrs.namespace }),
      operation: attrs.operation,
      userInfo: {
        username: attrs.user.name,
        ...(attrs.user.uid && { uid: attrs.user.uid }),
        groups: attrs.user.groups,
        ...(attrs.user.extra && { extra: attrs.user.extra }),
      },
      object: attrs.object ?? null,
      oldObject: attrs.oldObject ?? null,
      dryRun: attrs.dryRun,
      options: operationOptions(attrs),
    },
  };
}

/** The options of the operation, as kube sends them (CreateOptions, UpdateOptions or DeleteOptions). */
function operationOptions(attrs: AdmissionAttributes): unknown {
  const kind = { CREATE: 'CreateOptions', UPDATE: 'UpdateOptions', DELETE: 'DeleteOptions', CONNECT: undefined }[
    attrs.operation
  ];
  if (!kind) return null;
  return { kind, apiVersion: 'meta.k8s.io/v1', ...(attrs.dryRun && { dryRun: ['All'] }) };
}

function verifiedResponse(version: string, uid: string, review: unknown, mutating: boolean): ReviewAnswer {
  const r = (isPlainObject(review) ? review : {}) as { apiVersion?: unknown; kind?: unknown; response?: unknown };
  const response = r.response as Record<string, unknown> | undefined;
  if (!isPlainObject(response)) throw new WebhookCallError('webhook response was absent');
  if (version === 'v1') {
    if (response.uid !== uid)
      throw new WebhookCallError(
        `expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(response.uid ?? '')}`,
      );
    if (r.apiVersion !== 'admission.k8s.io/v1' || r.kind !== 'AdmissionReview')
      throw new WebhookCallError(
        `expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got ${String(r.apiVersion ?? '')}, Kind=${String(r.kind ?? '')}`,
      );
  }
  const patch = typeof response.patch === 'string' && response.patch ? response.patch : undefined;
  if (mutating && version === 'v1') {
    if (patch && response.patchType === undefined)
      throw new WebhookCallError('webhook returned response.patch but not response.patchType');
    if (!patch && response.patchType !== undefined)
      throw new WebhookCallError('webhook returned response.patchType but not response.patch');
    if (patch && response.patchType !== 'JSONPatch')
      throw new WebhookCallError(
        `webhook returned invalid response.patchType of ${JSON.stringify(response.patchType)}`,
      );
  }
  if (!mutating && patch) throw new WebhookCallError('validating webhook may not return response.patch');
  if (!mutating && response.patchType !== undefined)
    throw new WebhookCallError('validating webhook may not return response.patchType');
  const warnings = Array.isArray(response.warnings) ? response.warnings.filter((w) => typeof w === 'string') : [];
  const annotations = isPlainObject(response.auditAnnotations) ? response.auditAnnotations : {};
  const auditAnnotations = Object.fromEntries(
    Object.entries(annotations).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
  return {
    allowed: response.allowed === true,
    patch: mutating ? patch : undefined,
    warnings,
    result: response.status,
    auditAnnotations,
  };
}

/** webhookerrors.ToStatusErr: the webhook's status with kube's message, at least 400, always a Failure. */
function denial(hook: Webhook, status: unknown): errors.StatusError {
  const result = (isPlainObject(status) ? status : {}) as Record<string, unknown>;
  const deniedBy = `admission webhook ${JSON.stringify(hook.name)} denied the request`;
  const code =
    typeof result.code === 'number' && Number.isInteger(result.code) && result.code >= 400 ? result.code : 400;
  const message =
    typeof result.message === 'string' && result.message
      ? `${deniedBy}: ${result.message}`
      : typeof result.reason === 'string' && result.reason
        ? `${deniedBy}: ${result.reason}`
        : `${deniedBy} without explanation`;
  const answer = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(typeof result.reason === 'string' && result.reason && { reason: result.reason }),
    ...(isPlainObject(result.details) && { details: result.details }),
    code,
  };
  return new errors.StatusError(answer as errors.Status);
}
