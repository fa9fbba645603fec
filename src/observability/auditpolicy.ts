/**
 * The audit policy (--audit-policy-file): kube's audit.k8s.io/v1 Policy, read and checked as kube-apiserver reads
 * it (k8s.io/apiserver/pkg/audit/policy: reader.go, the validation of pkg/apis/audit/validation, checker.go).
 *
 * - The first rule that matches a request decides its level (None, Metadata, Request, RequestResponse) and the stages
 *   left out (the rule's omitStages and the policy's); a request no rule matches is not audited (None).
 * - A rule matches when each of its lists that is set holds the request's: users (the user name), userGroups (any
 *   of the user's groups), verbs, and then either namespaces and resources (resource requests only; namespace ""
 *   is a cluster-scoped object) or nonResourceURLs (other paths; "*" any, a trailing "*" a prefix).
 * - resources: per group ("" is the core group), resource names as kube's: "sharedsecrets", "*", a subresource
 *   as "clusters/status", "*\/status" or "clusters/*"; resourceNames narrows to those objects.
 * - omitManagedFields (the policy's, or a rule's when set) leaves metadata.managedFields out of bodies.
 *
 * A file kube would refuse stops the start with kube's message, naming the field: `<errors>: from file <path>`.
 * Unknown fields are warned about and ignored, as kube falls back from strict decoding.
 *
 * Without a file, DEFAULT_POLICY keeps what this server did before there were policies: every request at Metadata,
 * RequestReceived left out (kube audits nothing without a policy; its audit log needs one).
 */
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { aggregateMessage, fieldError, Path, type FieldError } from '../apimachinery/field.js';
import { isPlainObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';
import { nameIsDNSSubdomain } from '../apimachinery/validation.js';
import type { RequestInfo } from '../apimachinery/request.js';

export const LEVELS = ['None', 'Metadata', 'Request', 'RequestResponse'] as const;
export type Level = (typeof LEVELS)[number];
export const STAGES = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'] as const;
export type Stage = (typeof STAGES)[number];

export interface GroupResources {
  group: string;
  resources: string[];
  resourceNames: string[];
}

export interface PolicyRule {
  level: Level;
  users: string[];
  userGroups: string[];
  verbs: string[];
  resources: GroupResources[];
  namespaces: string[];
  nonResourceURLs: string[];
  omitStages: Stage[];
  omitManagedFields?: boolean;
}

export interface Policy {
  rules: PolicyRule[];
  omitStages: Stage[];
  omitManagedFields: boolean;
}

/** What the policy says of one request. */
export interface RequestAuditConfig {
  level: Level;
  omitStages: readonly Stage[];
  omitManagedFields: boolean;
}

/** Every request at Metadata, without a RequestReceived event: the audit log of a server started without a policy. */
export const DEFAULT_POLICY: Policy = {
  rules: [
    {
      level: 'Metadata',
      users: [],
      userGroups: [],
      verbs: [],
      resources: [],
      namespaces: [],
      nonResourceURLs: [],
      omitStages: [],
    },
  ],
  omitStages: ['RequestReceived'],
  omitManagedFields: false,
};

export class AuditPolicyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditPolicyError';
  }
}

/** Reads and checks the file; an AuditPolicyError says what kube would say. `warn` hears of ignored fields. */
export function loadPolicyFile(path: string, warn: (message: string) => void = () => {}): Policy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new AuditPolicyError(
      `failed to read file path ${JSON.stringify(path)}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  try {
    return parsePolicy(text, warn);
  } catch (err) {
    if (err instanceof AuditPolicyError) throw new AuditPolicyError(`${err.message}: from file ${path}`);
    throw err;
  }
}

export function parsePolicy(text: string, warn: (message: string) => void = () => {}): Policy {
  let doc: unknown;
  try {
    doc = yaml.load(text, { schema: yaml.CORE_SCHEMA });
  } catch (err) {
    throw new AuditPolicyError(`failed decoding: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isPlainObject(doc)) throw new AuditPolicyError('failed decoding: the policy is not a YAML or JSON object');
  if (doc.apiVersion !== 'audit.k8s.io/v1' || doc.kind !== 'Policy') {
    const gv = typeof doc.apiVersion === 'string' ? doc.apiVersion : '';
    const kind = typeof doc.kind === 'string' ? doc.kind : '';
    throw new AuditPolicyError(
      `unknown group version field ${gv}, Kind=${kind} in policy (expected audit.k8s.io/v1, Kind=Policy)`,
    );
  }
  const decode = new Decoder(warn);
  const policy: Policy = {
    rules: decode.list(doc, 'rules', Path.root('rules'), (v, at) => decode.rule(v, at)),
    omitStages: decode.strings(doc, 'omitStages', Path.root('omitStages')) as Stage[],
    omitManagedFields: decode.bool(doc, 'omitManagedFields', Path.root('omitManagedFields')) ?? false,
  };
  decode.unknown(doc, ['apiVersion', 'kind', 'metadata', 'rules', 'omitStages', 'omitManagedFields'], '');
  if (decode.typeErrors.length) throw new AuditPolicyError(`failed decoding: ${aggregateMessage(decode.typeErrors)}`);
  const errs = validatePolicy(policy);
  if (errs.length) throw new AuditPolicyError(aggregateMessage(errs));
  if (!policy.rules.length) throw new AuditPolicyError('loaded illegal policy with 0 rules');
  return policy;
}

/** Decoding with types checked by field (kube's decoder would say where in Go's terms). */
class Decoder {
  readonly typeErrors: FieldError[] = [];
  constructor(private readonly warn: (message: string) => void) {}

  rule(v: unknown, at: Path): PolicyRule {
    if (!isPlainObject(v)) {
      this.typeErrors.push(fieldError.typeInvalid(at, v, 'must be an object'));
      return DEFAULT_POLICY.rules[0];
    }
    const omitManagedFields = this.bool(v, 'omitManagedFields', at.child('omitManagedFields'));
    const level = v.level;
    if (level !== undefined && typeof level !== 'string')
      this.typeErrors.push(fieldError.typeInvalid(at.child('level'), level, 'must be a string'));
    this.unknown(
      v,
      [
        'level',
        'users',
        'userGroups',
        'verbs',
        'resources',
        'namespaces',
        'nonResourceURLs',
        'omitStages',
        'omitManagedFields',
      ],
      `${at}.`,
    );
    return {
      level: (typeof level === 'string' ? level : '') as Level,
      users: this.strings(v, 'users', at.child('users')),
      userGroups: this.strings(v, 'userGroups', at.child('userGroups')),
      verbs: this.strings(v, 'verbs', at.child('verbs')),
      resources: this.list(v, 'resources', at.child('resources'), (g, gat) => this.groupResources(g, gat)),
      namespaces: this.strings(v, 'namespaces', at.child('namespaces')),
      nonResourceURLs: this.strings(v, 'nonResourceURLs', at.child('nonResourceURLs')),
      omitStages: this.strings(v, 'omitStages', at.child('omitStages')) as Stage[],
      ...(omitManagedFields !== undefined ? { omitManagedFields } : {}),
    };
  }

  groupResources(v: unknown, at: Path): GroupResources {
    if (!isPlainObject(v)) {
      this.typeErrors.push(fieldError.typeInvalid(at, v, 'must be an object'));
      return { group: '', resources: [], resourceNames: [] };
    }
    if (v.group !== undefined && typeof v.group !== 'string')
      this.typeErrors.push(fieldError.typeInvalid(at.child('group'), v.group, 'must be a string'));
    this.unknown(v, ['group', 'resources', 'resourceNames'], `${at}.`);
    return {
      group: typeof v.group === 'string' ? v.group : '',
      resources: this.strings(v, 'resources', at.child('resources')),
      resourceNames: this.strings(v, 'resourceNames', at.child('resourceNames')),
    };
  }

  list<T>(obj: Record<string, unknown>, key: string, at: Path, item: (v: unknown, at: Path) => T): T[] {
    const v = obj[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      this.typeErrors.push(fieldError.typeInvalid(at, v, 'must be a list'));
      return [];
    }
    return v.map((e, i) => item(e, at.index(i)));
  }

  strings(obj: Record<string, unknown>, key: string, at: Path): string[] {
    return this.list(obj, key, at, (e, eat) => {
      if (typeof e === 'string') return e;
      this.typeErrors.push(fieldError.typeInvalid(eat, e, 'must be a string'));
      return '';
    });
  }

  bool(obj: Record<string, unknown>, key: string, at: Path): boolean | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v === 'boolean') return v;
    this.typeErrors.push(fieldError.typeInvalid(at, v, 'must be a boolean'));
    return undefined;
  }

  unknown(obj: Record<string, unknown>, known: string[], prefix: string): void {
    for (const key of Object.keys(obj))
      if (!known.includes(key)) this.warn(`audit policy: unknown field "${prefix}${key}" is ignored`);
  }
}

/** kube's ValidatePolicy. */
export function validatePolicy(policy: Policy): FieldError[] {
  const errs = validateOmitStages(policy.omitStages, Path.root('omitStages'));
  policy.rules.forEach((rule, i) => errs.push(...validateRule(rule, Path.root('rules').index(i))));
  return errs;
}

function validateRule(rule: PolicyRule, at: Path): FieldError[] {
  const errs: FieldError[] = [];
  if (!rule.level) errs.push(fieldError.required(at.child('level')));
  else if (!(LEVELS as readonly string[]).includes(rule.level))
    errs.push(fieldError.notSupported(at.child('level'), rule.level, LEVELS));
  rule.nonResourceURLs.forEach((url, i) => {
    if (url === '*') return;
    const uat = at.child('nonResourceURLs').index(i);
    if (!url.startsWith('/'))
      errs.push(fieldError.invalid(uat, url, "non-resource URL rules must begin with a '/' character"));
    if (url !== '' && url.slice(0, -1).includes('*'))
      errs.push(fieldError.invalid(uat, url, "non-resource URL wildcards '*' must be the final character of the rule"));
  });
  for (const gr of rule.resources) {
    // The empty group is the core group; any other must be a DNS subdomain (a group, not a group/version).
    const problems = gr.group ? nameIsDNSSubdomain(gr.group, false) : [];
    if (problems.length)
      errs.push(fieldError.invalid(at.child('resources').child('group'), gr.group, problems.join(',')));
    if (gr.resourceNames.length && !gr.resources.length)
      errs.push(
        fieldError.invalid(
          at.child('resources').child('resourceNames'),
          gr.resourceNames,
          'using resourceNames requires at least one resource',
        ),
      );
  }
  errs.push(...validateOmitStages(rule.omitStages, at.child('omitStages')));
  if (rule.nonResourceURLs.length && (rule.resources.length || rule.namespaces.length))
    errs.push(
      fieldError.invalid(
        at.child('nonResourceURLs'),
        rule.nonResourceURLs,
        'rules cannot apply to both regular resources and non-resource URLs',
      ),
    );
  return errs;
}

function validateOmitStages(stages: readonly string[], at: Path): FieldError[] {
  return stages.flatMap((stage, i) =>
    (STAGES as readonly string[]).includes(stage)
      ? []
      : [fieldError.invalid(at.index(i), stage, `allowed stages are ${STAGES.join(',')}`)],
  );
}

/** kube's policyRuleEvaluator: the first matching rule decides; the policy's omitStages go with every rule's. */
export class PolicyEvaluator {
  constructor(private readonly policy: Policy) {}

  evaluate(info: RequestInfo, user: UserInfo | undefined): RequestAuditConfig {
    const rule = this.policy.rules.find((r) => ruleMatches(r, info, user));
    if (!rule)
      return { level: 'None', omitStages: this.policy.omitStages, omitManagedFields: this.policy.omitManagedFields };
    return {
      level: rule.level,
      omitStages: [...new Set([...rule.omitStages, ...this.policy.omitStages])],
      omitManagedFields: rule.omitManagedFields ?? this.policy.omitManagedFields,
    };
  }
}

function ruleMatches(r: PolicyRule, info: RequestInfo, user: UserInfo | undefined): boolean {
  if (r.users.length && (!user || !r.users.includes(user.name))) return false;
  if (r.userGroups.length && (!user || !user.groups.some((g) => r.userGroups.includes(g)))) return false;
  if (r.verbs.length && !r.verbs.includes(info.verb)) return false;
  if (r.namespaces.length || r.resources.length) return resourceMatches(r, info);
  if (r.nonResourceURLs.length)
    return !info.isResourceRequest && r.nonResourceURLs.some((u) => pathMatches(info.path, u));
  return true;
}

function pathMatches(path: string, spec: string): boolean {
  if (spec === '*' || spec === path) return true;
  return spec.endsWith('*') && path.startsWith(spec.replace(/\*+$/, ''));
}

function resourceMatches(r: PolicyRule, info: RequestInfo): boolean {
  if (!info.isResourceRequest) return false;
  // A cluster-scoped object's namespace is "".
  if (r.namespaces.length && !r.namespaces.includes(info.namespace)) return false;
  if (!r.resources.length) return true;
  const { resource, subresource, name } = info;
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return r.resources.some(
    (gr) =>
      gr.group === info.apiGroup &&
      (!gr.resources.length ||
        gr.resources.some(
          (res) =>
            (!gr.resourceNames.length || gr.resourceNames.includes(name)) &&
            (res === combined ||
              res === '*' ||
              (subresource !== '' && res.startsWith('*/') && res.slice(2) === subresource) ||
              (res.endsWith('/*') && res.slice(0, -2) === resource)),
        )),
  );
}
