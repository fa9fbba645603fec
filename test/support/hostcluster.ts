/**
 * A stand-in host Kubernetes API for tests, over HTTPS on a free loopback port, speaking the real REST paths
 * @kubernetes/client-node calls:
 *
 * - POST /apis/authentication.k8s.io/v1/tokenreviews: tokens registered with addToken;
 * - POST /apis/authorization.k8s.io/v1/subjectaccessreviews: a small RBAC evaluator over the stored Roles,
 *   ClusterRoles (with aggregationRule), RoleBindings and ClusterRoleBindings, plus system:masters;
 * - /apis/rbac.authorization.k8s.io/v1/...: create, get, list (labelSelector, fieldSelector), watch, update,
 *   patch (JSON, merge; strategic treated as merge), delete and deletecollection of those four kinds, namespaced
 *   and cluster-scoped, with one resourceVersion counter and kube's Status bodies (404, 409, 422);
 * - GET /api/v1/namespaces/<ns> and /api/v1/namespaces/<ns>/secrets/<name>, seeded by the test.
 *
 * Every request needs the bearer token of the kubeconfig written at kubeconfigPath. `requests` logs what arrived
 * (to test caching); setDown simulates an outage. Not modelled: admission (objects may be created in namespaces
 * that do not exist), paging (limit is ignored), watch history compaction, server-side apply.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFieldSelector, type FieldSelector } from '../../src/apimachinery/fields.js';
import { parseLabelSelector, type LabelSelector } from '../../src/apimachinery/labels.js';
import { applyJsonPatch, applyMergePatch } from '../../src/apimachinery/patch.js';
import * as errors from '../../src/apimachinery/status.js';
import type { UserInfo } from '../../src/auth/types.js';
import { writeKubeconfig } from '../../src/kubeconfig.js';
import { ensureServingCertificate } from '../../src/pki/selfsigned.js';

const RBAC_GROUP = 'rbac.authorization.k8s.io';
const RBAC_API_VERSION = `${RBAC_GROUP}/v1`;
const RBAC_KINDS = {
  roles: { kind: 'Role', namespaced: true },
  rolebindings: { kind: 'RoleBinding', namespaced: true },
  clusterroles: { kind: 'ClusterRole', namespaced: false },
  clusterrolebindings: { kind: 'ClusterRoleBinding', namespaced: false },
} as const;
export type RbacResource = keyof typeof RBAC_KINDS;
const RESOURCE_OF_KIND: Record<string, RbacResource> = Object.fromEntries(Object.entries(RBAC_KINDS).map(([r, k]) => [k.kind, r as RbacResource]));

/** Loose shapes: the stand-in stores what it is sent. */
export type KubeObj = { apiVersion?: string; kind?: string; metadata: Record<string, any>; [k: string]: any };
interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}
interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}
interface SarSpec {
  user?: string;
  groups?: string[];
  uid?: string;
  extra?: Record<string, string[]>;
  resourceAttributes?: { namespace?: string; verb?: string; group?: string; version?: string; resource?: string; subresource?: string; name?: string };
  nonResourceAttributes?: { path?: string; verb?: string };
}
export interface SarStatus {
  allowed: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

interface WatchEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: RbacResource;
  object: KubeObj;
  /** The object before a MODIFIED, to tell selector transitions. */
  previous?: KubeObj;
}

interface Watcher {
  resource: RbacResource;
  namespace?: string;
  labels: LabelSelector;
  fields: FieldSelector;
  res: ServerResponse;
}

export interface RequestRecord {
  method: string;
  path: string;
  /** The resource the path names (tokenreviews, roles, namespaces, ...), '' for others. */
  resource: string;
}

export interface HostClusterStandIn {
  url: string;
  caPem: string;
  /** The bearer token of the kubeconfig (the server's own ServiceAccount, say). */
  token: string;
  kubeconfigPath: string;
  addToken(token: string, user: UserInfo & { audiences?: string[] }): void;
  removeToken(token: string): void;
  addNamespace(name: string, labels?: Record<string, string>): void;
  addSecret(namespace: string, name: string, data: Record<string, string>, type?: string): void;
  /** Creates or replaces an RBAC object as an API write would (new resourceVersion, watch event); returns it. */
  put(obj: KubeObj): KubeObj;
  get(resource: RbacResource, namespace: string, name: string): KubeObj | undefined;
  list(resource: RbacResource, namespace?: string): KubeObj[];
  remove(resource: RbacResource, namespace: string, name: string): boolean;
  /** Answers SubjectAccessReviews instead of RBAC when it returns a status (to test denied, errors, ...). */
  onSubjectAccessReview?: (spec: SarSpec) => SarStatus | undefined;
  readonly requests: RequestRecord[];
  count(resource: string, method?: string): number;
  resetCounts(): void;
  /** 'refused' stops listening (connection refused, watches cut); 'unavailable' answers 503 to everything. */
  setDown(down: boolean, mode?: 'refused' | 'unavailable'): Promise<void>;
  stop(): Promise<void>;
}

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
const clone = <T>(v: T): T => structuredClone(v);

/** JSON with sorted keys, to tell a no-op write (which kube does not persist). */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** metav1.LabelSelector (matchLabels, matchExpressions) as a predicate. */
function labelSelectorMatches(sel: any, labels: Record<string, string> = {}): boolean {
  for (const [k, v] of Object.entries<string>(sel?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel?.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const ok =
      e.operator === 'In' ? has && e.values?.includes(labels[e.key])
      : e.operator === 'NotIn' ? !has || !e.values?.includes(labels[e.key])
      : e.operator === 'Exists' ? has
      : e.operator === 'DoesNotExist' ? !has
      : false;
    if (!ok) return false;
  }
  return true;
}

// --- RBAC evaluation, as kube's rbac authorizer (RuleAllows and the helpers it uses) ---

const verbMatches = (r: PolicyRule, verb: string) => !!r.verbs?.some((v) => v === '*' || v === verb);
const groupMatches = (r: PolicyRule, group: string) => !!r.apiGroups?.some((g) => g === '*' || g === group);
const nameMatches = (r: PolicyRule, name: string) => !r.resourceNames?.length || r.resourceNames.includes(name);

function resourceMatches(r: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return !!r.resources?.some(
    (res) => res === '*' || res === combined || (!!subresource && res.length === subresource.length + 2 && res.startsWith('*/') && res.endsWith(subresource)),
  );
}

function urlMatches(r: PolicyRule, path: string): boolean {
  return !!r.nonResourceURLs?.some((u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))));
}

function ruleAllows(spec: SarSpec, r: PolicyRule): boolean {
  const ra = spec.resourceAttributes;
  if (ra) {
    return verbMatches(r, ra.verb ?? '') && groupMatches(r, ra.group ?? '') && resourceMatches(r, ra.resource ?? '', ra.subresource ?? '') && nameMatches(r, ra.name ?? '');
  }
  const nra = spec.nonResourceAttributes ?? {};
  return verbMatches(r, nra.verb ?? '') && urlMatches(r, nra.path ?? '');
}

function subjectMatches(s: Subject, spec: SarSpec, bindingNamespace: string): boolean {
  if (s.kind === 'User') return s.name === spec.user;
  if (s.kind === 'Group') return !!spec.groups?.includes(s.name);
  if (s.kind === 'ServiceAccount') return spec.user === `system:serviceaccount:${s.namespace || bindingNamespace}:${s.name}`;
  return false;
}

export async function startHostCluster(): Promise<HostClusterStandIn> {
  const dir = mkdtempSync(join(tmpdir(), 'host-cluster-'));
  const pki = await ensureServingCertificate({ certDir: join(dir, 'certs'), hosts: [] });
  const token = `standin-${randomUUID()}`;
  const tokens = new Map<string, UserInfo & { audiences?: string[] }>();
  const namespaces = new Map<string, KubeObj>();
  const secrets = new Map<string, KubeObj>();
  const objects = new Map<string, KubeObj>();
  const history: WatchEvent[] = [];
  const watchers = new Set<Watcher>();
  const requests: RequestRecord[] = [];
  let rv = 1;
  let mode: 'up' | 'refused' | 'unavailable' = 'up';

  const keyOf = (resource: string, ns: string, name: string) => `${resource}/${ns}/${name}`;
  const gr = (resource: string) => ({ group: RBAC_KINDS[resource as RbacResource] ? RBAC_GROUP : '', resource });

  function objectsOf(resource: RbacResource, namespace?: string): KubeObj[] {
    return [...objects.entries()]
      .filter(([k, o]) => k.startsWith(`${resource}/`) && (namespace === undefined || o.metadata.namespace === namespace))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, o]) => o);
  }

  // --- writes: every one bumps the resourceVersion and reaches the watchers ---

  function record(type: WatchEvent['type'], resource: RbacResource, object: KubeObj, previous?: KubeObj): void {
    const ev: WatchEvent = { rv: Number(object.metadata.resourceVersion), type, resource, object: clone(object), previous: previous && clone(previous) };
    history.push(ev);
    for (const w of watchers) deliver(w, ev);
  }

  function store(resource: RbacResource, obj: KubeObj, previous?: KubeObj): KubeObj {
    const { kind, namespaced } = RBAC_KINDS[resource];
    const ns = namespaced ? obj.metadata.namespace ?? '' : '';
    const stored: KubeObj = { ...clone(obj), apiVersion: RBAC_API_VERSION, kind };
    stored.metadata = { ...stored.metadata };
    if (namespaced) stored.metadata.namespace = ns;
    else delete stored.metadata.namespace;
    stored.metadata.uid = previous?.metadata.uid ?? stored.metadata.uid ?? randomUUID();
    stored.metadata.creationTimestamp = previous?.metadata.creationTimestamp ?? now();
    delete stored.metadata.generateName;
    if (previous) {
      // kube persists nothing, and sends no event, for a write that changes nothing.
      const same = canonical({ ...stored, metadata: { ...stored.metadata, resourceVersion: '' } }) === canonical({ ...previous, metadata: { ...previous.metadata, resourceVersion: '' } });
      if (same) return previous;
    }
    stored.metadata.resourceVersion = String(++rv);
    objects.set(keyOf(resource, ns, stored.metadata.name), stored);
    record(previous ? 'MODIFIED' : 'ADDED', resource, stored, previous);
    return stored;
  }

  function drop(resource: RbacResource, existing: KubeObj): KubeObj {
    objects.delete(keyOf(resource, existing.metadata.namespace ?? '', existing.metadata.name));
    const gone = { ...clone(existing), metadata: { ...existing.metadata, resourceVersion: String(++rv) } };
    record('DELETED', resource, gone);
    return gone;
  }

  function validate(resource: RbacResource, obj: KubeObj, previous?: KubeObj): void {
    const { kind } = RBAC_KINDS[resource];
    const gk = { group: RBAC_GROUP, kind };
    const name = obj.metadata?.name ?? '';
    if (resource.endsWith('bindings')) {
      if (!obj.roleRef?.kind || !obj.roleRef?.name) {
        throw errors.invalid(gk, name, [{ type: 'FieldValueRequired', field: 'roleRef', value: undefined, detail: '' }]);
      }
      if (previous && canonical(previous.roleRef) !== canonical(obj.roleRef)) {
        throw errors.invalid(gk, name, [{ type: 'FieldValueInvalid', field: 'roleRef', value: obj.roleRef, detail: 'cannot change roleRef' }]);
      }
    }
  }

  // --- watch ---

  function matches(w: Watcher, o: KubeObj): boolean {
    if (w.namespace !== undefined && o.metadata.namespace !== w.namespace) return false;
    return w.labels.matches(o.metadata.labels ?? {}) && w.fields.matches({ 'metadata.name': o.metadata.name ?? '', 'metadata.namespace': o.metadata.namespace ?? '' });
  }

  function send(w: Watcher, type: string, object: KubeObj): void {
    if (!w.res.writableEnded) w.res.write(`${JSON.stringify({ type, object })}\n`);
  }

  function deliver(w: Watcher, ev: WatchEvent): void {
    if (ev.resource !== w.resource) return;
    const after = matches(w, ev.object);
    if (ev.type !== 'MODIFIED') {
      if (after) send(w, ev.type, ev.object);
      return;
    }
    const before = ev.previous ? matches(w, ev.previous) : false;
    if (before && after) send(w, 'MODIFIED', ev.object);
    else if (after) send(w, 'ADDED', ev.object);
    else if (before) send(w, 'DELETED', ev.object);
  }

  function watch(req: IncomingMessage, res: ServerResponse, resource: RbacResource, namespace: string | undefined, q: URLSearchParams): void {
    const w: Watcher = { resource, namespace, labels: parseLabelSelector(q.get('labelSelector')), fields: parseFieldSelector(q.get('fieldSelector')), res };
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const from = q.get('resourceVersion');
    if (from && from !== '0') {
      for (const ev of history) if (ev.rv > Number(from)) deliver(w, ev);
    } else {
      for (const o of objectsOf(resource, namespace)) if (matches(w, o)) send(w, 'ADDED', o);
    }
    watchers.add(w);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    const done = () => {
      watchers.delete(w);
      if (timer) clearTimeout(timer);
    };
    res.on('close', done);
    req.on('close', done);
  }

  // --- RBAC REST ---

  function rbac(req: IncomingMessage, res: ServerResponse, body: any, resource: RbacResource, namespace: string | undefined, name: string | undefined, q: URLSearchParams): void {
    const { kind, namespaced } = RBAC_KINDS[resource];
    // Cluster-scoped kinds have no namespaced path; namespaced kinds are only listed and watched across namespaces.
    if (!namespaced && namespace !== undefined) throw errors.notFoundPath();
    if (namespaced && namespace === undefined && (name !== undefined || req.method !== 'GET')) throw errors.notFoundPath();
    const ns = namespace ?? '';
    const existing = name !== undefined ? objects.get(keyOf(resource, ns, name)) : undefined;
    const method = req.method ?? 'GET';

    if (name === undefined) {
      if (method === 'GET' && ['true', '1'].includes(q.get('watch') ?? '')) return watch(req, res, resource, namespace, q);
      if (method === 'GET' || method === 'DELETE') {
        const labels = parseLabelSelector(q.get('labelSelector'));
        const fields = parseFieldSelector(q.get('fieldSelector'));
        let items = objectsOf(resource, namespace).filter(
          (o) => labels.matches(o.metadata.labels ?? {}) && fields.matches({ 'metadata.name': o.metadata.name, 'metadata.namespace': o.metadata.namespace ?? '' }),
        );
        if (method === 'DELETE') items = items.map((o) => drop(resource, o));
        // Items of a typed list carry no kind/apiVersion, as kube-apiserver sends them.
        const listItems = items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
        return reply(res, 200, { kind: `${kind}List`, apiVersion: RBAC_API_VERSION, metadata: { resourceVersion: String(rv) }, items: listItems });
      }
      if (method === 'POST') {
        if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
        if (body.kind && body.kind !== kind) throw errors.badRequest(`the kind ${body.kind} does not belong at this path`);
        if (namespaced && body.metadata.namespace && body.metadata.namespace !== ns) {
          throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
        }
        const obj: KubeObj = { ...body, metadata: { ...body.metadata, namespace: ns } };
        if (!obj.metadata.name && obj.metadata.generateName) obj.metadata.name = `${obj.metadata.generateName}${randomUUID().slice(0, 5)}`;
        if (!obj.metadata.name) {
          throw errors.invalid({ group: RBAC_GROUP, kind }, '', [{ type: 'FieldValueRequired', field: 'metadata.name', value: undefined, detail: 'name or generateName is required' }]);
        }
        if (objects.has(keyOf(resource, ns, obj.metadata.name))) throw errors.alreadyExists(gr(resource), obj.metadata.name);
        delete obj.metadata.resourceVersion;
        validate(resource, obj);
        return reply(res, 201, store(resource, obj));
      }
      throw errors.methodNotSupported(gr(resource), method.toLowerCase());
    }

    if (method === 'GET') {
      if (!existing) throw errors.notFound(gr(resource), name);
      return reply(res, 200, existing);
    }
    if (method === 'PUT') {
      if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
      if (body.metadata.name !== name) throw errors.badRequest(`the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`);
      if (namespaced && body.metadata.namespace && body.metadata.namespace !== ns) {
        throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      const wanted = body.metadata.resourceVersion;
      if (existing && wanted && wanted !== existing.metadata.resourceVersion) throw errors.conflict(gr(resource), name, errors.OBJECT_MODIFIED);
      if (!existing && wanted) throw errors.notFound(gr(resource), name);
      const obj: KubeObj = { ...body, metadata: { ...body.metadata, namespace: ns } };
      validate(resource, obj, existing);
      // RBAC kinds may be created by PUT (AllowCreateOnUpdate).
      return reply(res, existing ? 200 : 201, store(resource, obj, existing));
    }
    if (method === 'PATCH') {
      if (!existing) throw errors.notFound(gr(resource), name);
      const type = (req.headers['content-type'] ?? '').split(';')[0].trim();
      let patched: any;
      if (type === 'application/json-patch+json') patched = applyJsonPatch(clone(existing), body);
      else if (type === 'application/merge-patch+json' || type === 'application/strategic-merge-patch+json') patched = applyMergePatch(clone(existing), body);
      else throw errors.unsupportedMediaType(['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json']);
      if (patched?.metadata?.name !== name) throw errors.badRequest('the patch may not change the name');
      const wanted = patched.metadata.resourceVersion;
      if (wanted && wanted !== existing.metadata.resourceVersion) throw errors.conflict(gr(resource), name, errors.OBJECT_MODIFIED);
      validate(resource, patched, existing);
      return reply(res, 200, store(resource, patched, existing));
    }
    if (method === 'DELETE') {
      if (!existing) throw errors.notFound(gr(resource), name);
      const pre = body?.preconditions ?? {};
      if (pre.uid && pre.uid !== existing.metadata.uid) {
        throw errors.conflict(gr(resource), name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.metadata.uid}`);
      }
      if (pre.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
        throw errors.conflict(gr(resource), name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${existing.metadata.resourceVersion}`);
      }
      drop(resource, existing);
      return reply(res, 200, errors.successStatus({ name, group: RBAC_GROUP, kind: resource, uid: existing.metadata.uid }));
    }
    throw errors.methodNotSupported(gr(resource), method.toLowerCase());
  }

  // --- reviews ---

  function tokenReview(body: any): unknown {
    const reviewed = body?.spec?.token;
    const user = typeof reviewed === 'string' ? tokens.get(reviewed) : undefined;
    const wanted: string[] = body?.spec?.audiences ?? [];
    let status: Record<string, unknown>;
    if (!user) status = { user: {}, authenticated: false, error: 'invalid bearer token' };
    else if (wanted.length && user.audiences && !user.audiences.some((a) => wanted.includes(a))) {
      status = { user: {}, authenticated: false, error: 'token audiences are invalid for the target audiences' };
    } else {
      const groups = user.groups.includes('system:authenticated') ? user.groups : [...user.groups, 'system:authenticated'];
      status = {
        authenticated: true,
        user: { username: user.name, ...(user.uid ? { uid: user.uid } : {}), groups, ...(user.extra ? { extra: user.extra } : {}) },
        audiences: wanted.length ? wanted.filter((a) => !user.audiences || user.audiences.includes(a)) : user.audiences ?? [],
      };
    }
    return { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: { creationTimestamp: null }, spec: body?.spec ?? {}, status };
  }

  function rulesOf(kind: string, name: string, namespace: string): PolicyRule[] {
    if (kind === 'Role') return objects.get(keyOf('roles', namespace, name))?.rules ?? [];
    if (kind !== 'ClusterRole') return [];
    const role = objects.get(keyOf('clusterroles', '', name));
    if (!role) return [];
    const selectors: unknown[] = role.aggregationRule?.clusterRoleSelectors ?? [];
    if (!selectors.length) return role.rules ?? [];
    // The aggregation controller's effect, computed on the fly.
    const aggregated = objectsOf('clusterroles').filter((r) => r !== role && selectors.some((s) => labelSelectorMatches(s, r.metadata.labels)));
    return [...(role.rules ?? []), ...aggregated.flatMap((r) => r.rules ?? [])];
  }

  function evaluate(spec: SarSpec): SarStatus {
    if (spec.groups?.includes('system:masters')) return { allowed: true };
    const ns = spec.resourceAttributes?.namespace ?? '';
    const bindings: Array<[string, KubeObj]> = objectsOf('clusterrolebindings').map((b) => ['ClusterRoleBinding', b]);
    if (spec.resourceAttributes && ns) bindings.push(...objectsOf('rolebindings', ns).map((b): [string, KubeObj] => ['RoleBinding', b]));
    for (const [bindingKind, b] of bindings) {
      const bindingNs = b.metadata.namespace ?? '';
      const subject = (b.subjects as Subject[] | undefined)?.find((s) => subjectMatches(s, spec, bindingNs));
      if (!subject) continue;
      if (rulesOf(b.roleRef.kind, b.roleRef.name, bindingNs).some((r) => ruleAllows(spec, r))) {
        const where = bindingNs ? `${b.metadata.name}/${bindingNs}` : b.metadata.name;
        const to = subject.kind === 'ServiceAccount' ? `ServiceAccount "${subject.name}/${subject.namespace || bindingNs}"` : `${subject.kind} "${subject.name}"`;
        return { allowed: true, reason: `RBAC: allowed by ${bindingKind} "${where}" of ${b.roleRef.kind} "${b.roleRef.name}" to ${to}` };
      }
    }
    return { allowed: false };
  }

  function subjectAccessReview(body: any): unknown {
    const spec: SarSpec = body?.spec ?? {};
    if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
      throw errors.invalid({ group: 'authorization.k8s.io', kind: 'SubjectAccessReview' }, '', [
        { type: 'FieldValueRequired', field: 'spec.resourceAttributes', value: undefined, detail: 'exactly one of nonResourceAttributes or resourceAttributes must be specified' },
      ]);
    }
    const status = api.onSubjectAccessReview?.(spec) ?? evaluate(spec);
    return { kind: 'SubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: { creationTimestamp: null }, spec, status };
  }

  // --- HTTP ---

  function reply(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  async function readBody(req: IncomingMessage): Promise<any> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      throw errors.badRequest('the request body is not JSON');
    }
  }

  const RBAC_PATH = /^\/apis\/rbac\.authorization\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?(roles|rolebindings|clusterroles|clusterrolebindings)(?:\/([^/]+))?\/?$/;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://host');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const rbacMatch = RBAC_PATH.exec(path);
    const resource = rbacMatch?.[2] ?? /\/(tokenreviews|subjectaccessreviews|secrets|namespaces)(?:\/[^/]+)?$/.exec(path)?.[1] ?? '';
    requests.push({ method, path, resource });
    if (mode === 'unavailable') throw errors.serviceUnavailable('the host cluster is down (stand-in)');
    if (req.headers.authorization !== `Bearer ${token}`) throw errors.unauthorized();
    const body = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) ? await readBody(req) : undefined;

    if (rbacMatch) {
      const [, ns, res2, name] = rbacMatch;
      return rbac(req, res, body, res2 as RbacResource, ns === undefined ? undefined : decodeURIComponent(ns), name === undefined ? undefined : decodeURIComponent(name), url.searchParams);
    }
    if (method === 'POST' && path === '/apis/authentication.k8s.io/v1/tokenreviews') return reply(res, 201, tokenReview(body));
    if (method === 'POST' && path === '/apis/authorization.k8s.io/v1/subjectaccessreviews') return reply(res, 201, subjectAccessReview(body));
    let m = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
    if (m && method === 'GET') {
      const ns = namespaces.get(decodeURIComponent(m[1]));
      if (!ns) throw errors.notFound({ group: '', resource: 'namespaces' }, decodeURIComponent(m[1]));
      return reply(res, 200, ns);
    }
    m = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/.exec(path);
    if (m && method === 'GET') {
      const secret = secrets.get(`${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}`);
      if (!secret) throw errors.notFound({ group: '', resource: 'secrets' }, decodeURIComponent(m[2]));
      return reply(res, 200, secret);
    }
    throw errors.notFoundPath();
  }

  const server: Server = createServer({ cert: pki.certPem, key: pki.keyPem }, (req, res) => {
    handle(req, res).catch((err) => {
      if (res.headersSent) return res.end();
      const status = errors.isStatusError(err) ? err.status : errors.internalError(err).status;
      reply(res, status.code, status);
    });
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const close = () => new Promise<void>((resolve) => {
    if (!server.listening) return resolve();
    for (const w of watchers) w.res.end();
    server.close(() => resolve());
    server.closeAllConnections();
  });

  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;
  const kubeconfigPath = join(dir, 'host.kubeconfig');
  writeKubeconfig(kubeconfigPath, { server: url, caPem: pki.caPem, token });

  const api: HostClusterStandIn = {
    url,
    caPem: pki.caPem,
    token,
    kubeconfigPath,
    requests,
    addToken: (t, user) => void tokens.set(t, clone(user)),
    removeToken: (t) => void tokens.delete(t),
    addNamespace(name, labels = {}) {
      namespaces.set(name, {
        kind: 'Namespace',
        apiVersion: 'v1',
        metadata: { name, uid: randomUUID(), resourceVersion: String(++rv), creationTimestamp: now(), labels: { 'kubernetes.io/metadata.name': name, ...labels } },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      });
    },
    addSecret(namespace, name, data, type = 'Opaque') {
      secrets.set(`${namespace}/${name}`, {
        kind: 'Secret',
        apiVersion: 'v1',
        metadata: { name, namespace, uid: randomUUID(), resourceVersion: String(++rv), creationTimestamp: now() },
        type,
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      });
    },
    put(obj) {
      const resource = RESOURCE_OF_KIND[obj.kind ?? ''];
      if (!resource) throw new Error(`the stand-in stores Role, ClusterRole, RoleBinding and ClusterRoleBinding, not ${obj.kind}`);
      const ns = RBAC_KINDS[resource].namespaced ? obj.metadata.namespace ?? 'default' : '';
      const withNs = { ...obj, metadata: { ...obj.metadata, namespace: ns } };
      const previous = objects.get(keyOf(resource, ns, obj.metadata.name));
      validate(resource, withNs, previous);
      return clone(store(resource, withNs, previous));
    },
    get: (resource, namespace, name) => clone(objects.get(keyOf(resource, RBAC_KINDS[resource].namespaced ? namespace : '', name))),
    list: (resource, namespace) => clone(objectsOf(resource, namespace)),
    remove(resource, namespace, name) {
      const existing = objects.get(keyOf(resource, RBAC_KINDS[resource].namespaced ? namespace : '', name));
      if (existing) drop(resource, existing);
      return !!existing;
    },
    count: (resource, method) => requests.filter((r) => r.resource === resource && (!method || r.method === method)).length,
    resetCounts: () => void requests.splice(0),
    async setDown(down, how = 'refused') {
      if (!down) {
        if (mode === 'refused') await listen(port);
        mode = 'up';
        return;
      }
      mode = how;
      if (how === 'refused') await close();
    },
    async stop() {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return api;
}
