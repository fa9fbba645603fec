/**
 * Where a ProjectSecret is kept as a native Secret (spec.delivery.targets) and of which type (spec.delivery.type), as
 * the server reads them: the host cluster's project namespace by default, virtual clusters of the project, connected
 * Clusters the project allows. Each place has one key, the `target` of its line in status.targets.
 */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName } from '../../apimachinery/validation.js';
import type { ProjectSecret } from './types.js';

export type TargetKind = 'host' | 'virtualCluster' | 'cluster';

/** One place a ProjectSecret is delivered to. */
export interface DeliveryTarget {
  kind: TargetKind;
  /** The VirtualClusterInstance (or '*') or the Cluster; '' for the host. */
  name: string;
  /** The namespace there; '' for the host (the ProjectSecret's own). */
  namespace: string;
}

/** The line of status.targets of the host's copy. */
export const HOST = 'host';
/** A virtualCluster target naming every instance of the project. */
export const ALL_INSTANCES = '*';
/** At most this many entries in spec.delivery.targets (the CRD's maxItems too). */
export const MAX_TARGET_ENTRIES = 16;
/** At most this many places one ProjectSecret is delivered to, '*' expanded: the status lists no more. */
export const MAX_DELIVERIES = 256;
export const DEFAULT_TYPE = 'Opaque';

/** `host`, `virtualCluster/<instance>/<namespace>` or `cluster/<cluster>/<namespace>`. */
export const targetKey = (t: DeliveryTarget): string =>
  t.kind === 'host' ? HOST : `${t.kind}/${t.name}/${t.namespace}`;

/** The place a line's key names. */
export function parseTargetKey(key: string): DeliveryTarget | undefined {
  if (key === HOST) return { kind: 'host', name: '', namespace: '' };
  const [kind, name, namespace, ...rest] = key.split('/');
  if ((kind !== 'virtualCluster' && kind !== 'cluster') || !name || !namespace || rest.length) return undefined;
  return { kind, name, namespace };
}

/** The type of the Secrets delivered. */
export const deliveryType = (obj: ProjectSecret): string => obj.spec?.delivery?.type || DEFAULT_TYPE;

/** Whether spec.delivery.targets is absent: the host only, as before targets existed. */
const defaulted = (obj: ProjectSecret) => !Array.isArray(obj.spec?.delivery?.targets);

/** The places spec.delivery.targets names, as written ('*' not expanded); the host alone when absent. */
export function namedTargets(obj: ProjectSecret): DeliveryTarget[] {
  if (defaulted(obj)) return [{ kind: 'host', name: '', namespace: '' }];
  return (obj.spec!.delivery!.targets ?? []).flatMap((t): DeliveryTarget[] => {
    if (t?.virtualCluster) return [{ kind: 'virtualCluster', ...t.virtualCluster }];
    if (t?.cluster) return [{ kind: 'cluster', ...t.cluster }];
    if (t?.host) return [{ kind: 'host', name: '', namespace: '' }];
    return [];
  });
}

/** The targets outside the host: those whose copies rest on who named them (status.targetedBy). */
export const remoteTargets = (obj: ProjectSecret): DeliveryTarget[] =>
  namedTargets(obj).filter((t) => t.kind !== 'host');

/**
 * The keys kube requires of a Secret of each built-in type (core/v1 validation, ValidateSecret), and whether a value
 * must be JSON. `anyOf` types need one of their keys. Types not listed but custom ones (a qualified name) carry no
 * rule; the two refused below are credentials kube itself makes, never delivered.
 */
const TYPE_RULES: Record<string, { required?: string[]; anyOf?: string[]; json?: string }> = {
  Opaque: {},
  'kubernetes.io/dockercfg': { required: ['.dockercfg'], json: '.dockercfg' },
  'kubernetes.io/dockerconfigjson': { required: ['.dockerconfigjson'], json: '.dockerconfigjson' },
  'kubernetes.io/basic-auth': { anyOf: ['username', 'password'] },
  'kubernetes.io/ssh-auth': { required: ['ssh-privatekey'] },
  'kubernetes.io/tls': { required: ['tls.crt', 'tls.key'] },
};
const REFUSED_TYPES: Record<string, string> = {
  'kubernetes.io/service-account-token': "kube's token controller fills such a Secret with a ServiceAccount's token",
  'bootstrap.kubernetes.io/token': 'a bootstrap token lets nodes join the cluster it is in',
};

/** The keys of `type` missing from `keys`, in kube's words; none when it has what the type needs. */
export function missingKeys(type: string, keys: readonly string[]): string[] {
  const rule = TYPE_RULES[type] ?? {};
  const missing = (rule.required ?? []).filter((k) => !keys.includes(k));
  if (rule.anyOf && !rule.anyOf.some((k) => keys.includes(k))) missing.push(rule.anyOf.join(' or '));
  return missing;
}

/** The key of `type` whose value must be JSON, if any. */
export const jsonKey = (type: string): string | undefined => TYPE_RULES[type]?.json;

/** Whether a base64 value decodes to JSON. */
export function isJsonValue(b64: string): boolean {
  try {
    JSON.parse(Buffer.from(b64, 'base64').toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

/** What a message shows of a value, as kube's Secret validation does. */
const REDACTED = '<secret contents redacted>';
const spec = Path.root('spec');
const deliveryPath = spec.child('delivery');

/** What the schema cannot say of spec.delivery: the type, names, no place twice, and the data the type needs. */
export function deliveryErrors(obj: ProjectSecret, synced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const type = deliveryType(obj);
  const typePath = deliveryPath.child('type');
  if (REFUSED_TYPES[type])
    errs.push(fieldError.forbidden(typePath, `${type} is not delivered: ${REFUSED_TYPES[type]}`));
  else if (!TYPE_RULES[type])
    for (const msg of isQualifiedName(type)) errs.push(fieldError.invalid(typePath, type, msg));
  // Synced data is the server's to write; whether the SharedSecret has the keys is asked at admission and delivery.
  if (!synced) {
    const data = (obj.spec?.data ?? {}) as Record<string, string>;
    for (const key of missingKeys(type, Object.keys(data)))
      errs.push(fieldError.required(spec.child('data').key(key), `a Secret of type ${type} needs the key ${key}`));
    const json = jsonKey(type);
    if (json && data[json] !== undefined && !isJsonValue(data[json]))
      errs.push(fieldError.invalid(spec.child('data').key(json), REDACTED, `must be JSON, as ${type} needs`));
  }
  const seen = new Set<string>();
  (obj.spec?.delivery?.targets ?? []).forEach((entry, i) => {
    const at = deliveryPath.child('targets').index(i);
    const [t] = namedTargets({ ...obj, spec: { delivery: { targets: [entry] } } });
    if (!t) return; // the schema's rule says it names none
    const key = targetKey(t);
    if (seen.has(key)) errs.push(fieldError.duplicate(at, key));
    seen.add(key);
    if (t.kind === 'host') return;
    const field = at.child(t.kind);
    if (!(t.kind === 'virtualCluster' && t.name === ALL_INSTANCES))
      for (const msg of isDNS1123Subdomain(t.name)) errs.push(fieldError.invalid(field.child('name'), t.name, msg));
    for (const msg of isDNS1123Label(t.namespace))
      errs.push(fieldError.invalid(field.child('namespace'), t.namespace, msg));
  });
  return errs;
}
