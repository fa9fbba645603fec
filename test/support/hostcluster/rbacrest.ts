/**
 * The REST verbs of /apis/rbac.authorization.k8s.io/v1/...: create (generateName), get, list and deletecollection
 * (labelSelector, fieldSelector), watch, update (create on update, as RBAC allows), patch (JSON, merge; strategic
 * treated as merge) and delete (uid and resourceVersion preconditions), with kube's Status bodies.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseFieldSelector } from '../../../src/apimachinery/fields.js';
import { parseLabelSelector } from '../../../src/apimachinery/labels.js';
import { applyJsonPatch, applyMergePatch } from '../../../src/apimachinery/patch.js';
import * as errors from '../../../src/apimachinery/status.js';
import { reply } from './http.js';
import { clone, type KubeObj, type ResourceVersions } from './objects.js';
import { RBAC_API_VERSION, RBAC_GROUP, RBAC_KINDS, type RbacResource, type RbacStore } from './rbacstore.js';
import type { WatchHub } from './watch.js';

/** The path of every RBAC request: namespace (absent for cluster-wide), resource, name (absent for collections). */
export const RBAC_PATH =
  /^\/apis\/rbac\.authorization\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?(roles|rolebindings|clusterroles|clusterrolebindings)(?:\/([^/]+))?\/?$/;

export interface RbacRestOptions {
  rv: ResourceVersions;
  store: RbacStore;
  watches: WatchHub;
  /** The test's hook, read at each write: throwing a StatusError refuses a create or update. */
  onWrite: () => ((obj: KubeObj) => void) | undefined;
}

/** Returns the handler of one RBAC request, its path already split by RBAC_PATH. */
export function rbacRest({ rv, store, watches, onWrite }: RbacRestOptions) {
  const gr = (resource: string) => ({ group: RBAC_KINDS[resource as RbacResource] ? RBAC_GROUP : '', resource });

  return function rbac(
    req: IncomingMessage,
    res: ServerResponse,
    body: any,
    resource: RbacResource,
    namespace: string | undefined,
    name: string | undefined,
    q: URLSearchParams,
  ): void {
    const { kind, namespaced } = RBAC_KINDS[resource];
    // Cluster-scoped kinds have no namespaced path; namespaced kinds are only listed and watched across namespaces.
    if (!namespaced && namespace !== undefined) throw errors.notFoundPath();
    if (namespaced && namespace === undefined && (name !== undefined || req.method !== 'GET'))
      throw errors.notFoundPath();
    const ns = namespace ?? '';
    const existing = name !== undefined ? store.find(resource, ns, name) : undefined;
    const method = req.method ?? 'GET';

    if (name === undefined) {
      if (method === 'GET' && ['true', '1'].includes(q.get('watch') ?? ''))
        return watches.serve(req, res, resource, namespace, q, () => store.objectsOf(resource, namespace));
      if (method === 'GET' || method === 'DELETE') {
        const labels = parseLabelSelector(q.get('labelSelector'));
        const fields = parseFieldSelector(q.get('fieldSelector'));
        let items = store
          .objectsOf(resource, namespace)
          .filter(
            (o) =>
              labels.matches(o.metadata.labels ?? {}) &&
              fields.matches({ 'metadata.name': o.metadata.name, 'metadata.namespace': o.metadata.namespace ?? '' }),
          );
        if (method === 'DELETE') items = items.map((o) => store.drop(resource, o));
        // Items of a typed list carry no kind/apiVersion, as kube-apiserver sends them.
        const listItems = items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
        return reply(res, 200, {
          kind: `${kind}List`,
          apiVersion: RBAC_API_VERSION,
          metadata: { resourceVersion: rv.current() },
          items: listItems,
        });
      }
      if (method === 'POST') {
        if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
        if (body.kind && body.kind !== kind)
          throw errors.badRequest(`the kind ${body.kind} does not belong at this path`);
        if (namespaced && body.metadata.namespace && body.metadata.namespace !== ns) {
          throw errors.badRequest(
            'the namespace of the provided object does not match the namespace sent on the request',
          );
        }
        const obj: KubeObj = { ...body, metadata: { ...body.metadata, namespace: ns } };
        if (!obj.metadata.name && obj.metadata.generateName)
          obj.metadata.name = `${obj.metadata.generateName}${randomUUID().slice(0, 5)}`;
        if (!obj.metadata.name) {
          throw errors.invalid({ group: RBAC_GROUP, kind }, '', [
            {
              type: 'FieldValueRequired',
              field: 'metadata.name',
              value: undefined,
              detail: 'name or generateName is required',
            },
          ]);
        }
        if (store.find(resource, ns, obj.metadata.name)) throw errors.alreadyExists(gr(resource), obj.metadata.name);
        delete obj.metadata.resourceVersion;
        onWrite()?.(obj);
        store.validate(resource, obj);
        return reply(res, 201, store.store(resource, obj));
      }
      throw errors.methodNotSupported(gr(resource), method.toLowerCase());
    }

    if (method === 'GET') {
      if (!existing) throw errors.notFound(gr(resource), name);
      return reply(res, 200, existing);
    }
    if (method === 'PUT') {
      if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
      if (body.metadata.name !== name)
        throw errors.badRequest(
          `the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`,
        );
      if (namespaced && body.metadata.namespace && body.metadata.namespace !== ns) {
        throw errors.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      const wanted = body.metadata.resourceVersion;
      if (existing && wanted && wanted !== existing.metadata.resourceVersion)
        throw errors.conflict(gr(resource), name, errors.OBJECT_MODIFIED);
      if (!existing && wanted) throw errors.notFound(gr(resource), name);
      const obj: KubeObj = { ...body, metadata: { ...body.metadata, namespace: ns } };
      onWrite()?.(obj);
      store.validate(resource, obj, existing);
      // RBAC kinds may be created by PUT (AllowCreateOnUpdate).
      return reply(res, existing ? 200 : 201, store.store(resource, obj, existing));
    }
    if (method === 'PATCH') {
      if (!existing) throw errors.notFound(gr(resource), name);
      const type = (req.headers['content-type'] ?? '').split(';')[0].trim();
      let patched: any;
      if (type === 'application/json-patch+json') patched = applyJsonPatch(clone(existing), body);
      else if (type === 'application/merge-patch+json' || type === 'application/strategic-merge-patch+json')
        patched = applyMergePatch(clone(existing), body);
      else
        throw errors.unsupportedMediaType([
          'application/json-patch+json',
          'application/merge-patch+json',
          'application/strategic-merge-patch+json',
        ]);
      if (patched?.metadata?.name !== name) throw errors.badRequest('the patch may not change the name');
      const wanted = patched.metadata.resourceVersion;
      if (wanted && wanted !== existing.metadata.resourceVersion)
        throw errors.conflict(gr(resource), name, errors.OBJECT_MODIFIED);
      store.validate(resource, patched, existing);
      return reply(res, 200, store.store(resource, patched, existing));
    }
    if (method === 'DELETE') {
      if (!existing) throw errors.notFound(gr(resource), name);
      const pre = body?.preconditions ?? {};
      if (pre.uid && pre.uid !== existing.metadata.uid) {
        throw errors.conflict(
          gr(resource),
          name,
          `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.metadata.uid}`,
        );
      }
      if (pre.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
        throw errors.conflict(
          gr(resource),
          name,
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${existing.metadata.resourceVersion}`,
        );
      }
      store.drop(resource, existing);
      return reply(
        res,
        200,
        errors.successStatus({ name, group: RBAC_GROUP, kind: resource, uid: existing.metadata.uid }),
      );
    }
    throw errors.methodNotSupported(gr(resource), method.toLowerCase());
  };
}
