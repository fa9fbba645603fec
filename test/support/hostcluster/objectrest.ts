/**
 * The REST verbs of the stored kinds (kinds.ts) at kube's paths, /apis/rbac.authorization.k8s.io/v1/... and
 * /api/v1/[namespaces/<ns>/]secrets[/<name>]: create (generateName), get, list and deletecollection
 * (labelSelector, fieldSelector, limit and continue; metadata only when the Accept header asks for
 * PartialObjectMetadata), watch (metadata only likewise), update (create on update where the kind allows it: RBAC kinds, not
 * Secrets), patch (JSON, merge; strategic treated as merge) and delete (uid and resourceVersion preconditions),
 * with kube's Status bodies. Namespaced kinds are listed and watched across namespaces at the path without one.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fieldError, GoLiteral } from '../../../src/apimachinery/field.js';
import { parseFieldSelector } from '../../../src/apimachinery/fields.js';
import { parseLabelSelector } from '../../../src/apimachinery/labels.js';
import { applyJsonPatch, applyMergePatch } from '../../../src/apimachinery/patch.js';
import * as errors from '../../../src/apimachinery/status.js';
import { reply } from './http.js';
import { apiVersionOf, decode, KINDS, kindOf, selectableFields, type StoredResource } from './kinds.js';
import type { ObjectStore } from './objectstore.js';
import { clone, type KubeObj, type ResourceVersions } from './objects.js';
import { metadataOnly, wantsMetadataOnly, type WatchHub } from './watch.js';

/** A request path of a stored kind: namespace (absent for cluster-wide), resource, name (absent for collections). */
export interface ObjectPath {
  resource: StoredResource;
  namespace?: string;
  name?: string;
}

const OBJECT_PATH = /^\/(?:api|apis\/([^/]+))\/v1\/(?:namespaces\/([^/]+)\/)?([^/]+)(?:\/([^/]+))?\/?$/;

/** The stored kind a path names, or undefined (another part serves it, or nothing does). */
export function matchObjectPath(path: string): ObjectPath | undefined {
  const m = OBJECT_PATH.exec(path);
  if (!m) return undefined;
  const [, group = '', namespace, resource, name] = m;
  if (!Object.hasOwn(KINDS, resource) || KINDS[resource as StoredResource].group !== group) return undefined;
  return {
    resource: resource as StoredResource,
    namespace: namespace === undefined ? undefined : decodeURIComponent(namespace),
    name: name === undefined ? undefined : decodeURIComponent(name),
  };
}

export interface ObjectRestOptions {
  rv: ResourceVersions;
  store: ObjectStore;
  watches: WatchHub;
  /** The test's hook for a resource, read at each write: throwing a StatusError refuses a create or update. */
  onWrite: (resource: StoredResource) => ((obj: KubeObj) => void) | undefined;
  /** kube's NamespaceLifecycle for a create: throws when the namespace cannot take new objects of the resource. */
  admitCreate?: (resource: StoredResource, namespace: string) => void;
}

/** Returns the handler of one request of a stored kind, its path already split by matchObjectPath. */
export function objectRest({ rv, store, watches, onWrite, admitCreate }: ObjectRestOptions) {
  return function objects(
    req: IncomingMessage,
    res: ServerResponse,
    body: any,
    { resource, namespace, name }: ObjectPath,
    q: URLSearchParams,
  ): void {
    const { group, kind, namespaced, createOnUpdate, decodeError } = kindOf(resource);
    const gr = { group, resource };
    // Cluster-scoped kinds have no namespaced path; namespaced kinds are only listed and watched across namespaces.
    if (!namespaced && namespace !== undefined) throw errors.notFoundPath();
    if (namespaced && namespace === undefined && (name !== undefined || req.method !== 'GET'))
      throw errors.notFoundPath();
    const ns = namespace ?? '';
    const existing = name !== undefined ? store.find(resource, ns, name) : undefined;
    const method = req.method ?? 'GET';

    if (name === undefined) {
      const onlyMetadata = method === 'GET' && wantsMetadataOnly(req.headers.accept);
      if (method === 'GET' && ['true', '1'].includes(q.get('watch') ?? ''))
        return watches.serve(
          req,
          res,
          resource,
          namespace,
          q,
          () => store.objectsOf(resource, namespace),
          (o) => selectableFields(resource, o),
          onlyMetadata ? metadataOnly : undefined,
        );
      if (method === 'GET' || method === 'DELETE') {
        const labels = parseLabelSelector(q.get('labelSelector'));
        const fields = parseFieldSelector(q.get('fieldSelector'));
        let items = store
          .objectsOf(resource, namespace)
          .filter((o) => labels.matches(o.metadata.labels ?? {}) && fields.matches(selectableFields(resource, o)));
        if (method === 'DELETE') items = items.map((o) => store.drop(resource, o));
        // A chunk (limit and continue, here the offset of the next item), as kube pages a list.
        const from = Number(q.get('continue') || 0);
        const limit = Number(q.get('limit') || 0);
        const more = limit > 0 && items.length > from + limit;
        items = limit > 0 ? items.slice(from, from + limit) : items;
        const listMeta = {
          resourceVersion: rv.current(),
          ...(more ? { continue: String(from + limit), remainingItemCount: items.length - from - limit } : {}),
        };
        if (onlyMetadata)
          return reply(res, 200, {
            kind: 'PartialObjectMetadataList',
            apiVersion: 'meta.k8s.io/v1',
            metadata: listMeta,
            items: items.map(metadataOnly),
          });
        // Items of a typed list carry no kind/apiVersion, as kube-apiserver sends them.
        const listItems = items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
        return reply(res, 200, {
          kind: `${kind}List`,
          apiVersion: apiVersionOf(resource),
          metadata: listMeta,
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
        const obj = decode(resource, { ...body, metadata: { ...body.metadata, namespace: ns } });
        if (!obj.metadata.name && obj.metadata.generateName)
          obj.metadata.name = `${obj.metadata.generateName}${randomUUID().slice(0, 5)}`;
        if (!obj.metadata.name) {
          throw errors.invalid({ group, kind }, '', [
            fieldError.required('metadata.name', 'name or generateName is required'),
          ]);
        }
        if (namespaced) admitCreate?.(resource, ns);
        if (store.find(resource, ns, obj.metadata.name)) throw errors.alreadyExists(gr, obj.metadata.name);
        delete obj.metadata.resourceVersion;
        onWrite(resource)?.(obj);
        store.validate(resource, obj);
        return reply(res, 201, store.store(resource, obj));
      }
      throw errors.methodNotSupported(gr, method.toLowerCase());
    }

    if (method === 'GET') {
      if (!existing) throw errors.notFound(gr, name);
      return reply(res, 200, existing);
    }
    if (method === 'PUT') {
      if (!body?.metadata) throw errors.badRequest('the body must be an object with metadata');
      const decoded = decode(resource, body);
      if (decoded.metadata.name !== name)
        throw errors.badRequest(
          `the name of the object (${decoded.metadata.name}) does not match the name on the URL (${name})`,
        );
      if (namespaced && decoded.metadata.namespace && decoded.metadata.namespace !== ns) {
        throw errors.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      // A kind without create on update (Secrets) answers 404 for a missing object, whatever resourceVersion.
      if (!existing && !createOnUpdate) throw errors.notFound(gr, name);
      const wanted = decoded.metadata.resourceVersion;
      if (existing && wanted && wanted !== existing.metadata.resourceVersion)
        throw errors.conflict(gr, name, errors.OBJECT_MODIFIED);
      if (!existing && wanted) throw errors.notFound(gr, name);
      const obj: KubeObj = { ...decoded, metadata: { ...decoded.metadata, namespace: ns } };
      onWrite(resource)?.(obj);
      store.validate(resource, obj, existing);
      return reply(res, existing ? 200 : 201, store.store(resource, obj, existing));
    }
    if (method === 'PATCH') {
      if (!existing) throw errors.notFound(gr, name);
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
      // kube cannot decode what the patch made: a 422 on `patch`, whose value (kube's: the patched object) the
      // stand-in leaves out, as it would hold secret data.
      const why = decodeError?.(patched);
      if (why) {
        const value = new GoLiteral('"<the patched object>"');
        throw errors.invalid({ group: '', kind: '' }, '', [fieldError.invalid('patch', value, why)]);
      }
      patched = decode(resource, patched);
      const wanted = patched.metadata.resourceVersion;
      if (wanted && wanted !== existing.metadata.resourceVersion)
        throw errors.conflict(gr, name, errors.OBJECT_MODIFIED);
      store.validate(resource, patched, existing);
      return reply(res, 200, store.store(resource, patched, existing));
    }
    if (method === 'DELETE') {
      if (!existing) throw errors.notFound(gr, name);
      const pre = body?.preconditions ?? {};
      if (pre.uid && pre.uid !== existing.metadata.uid) {
        throw errors.conflict(
          gr,
          name,
          `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.metadata.uid}`,
        );
      }
      if (pre.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
        throw errors.conflict(
          gr,
          name,
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${existing.metadata.resourceVersion}`,
        );
      }
      store.drop(resource, existing);
      return reply(
        res,
        200,
        errors.successStatus({ name, ...(group && { group }), kind: resource, uid: existing.metadata.uid }),
      );
    }
    throw errors.methodNotSupported(gr, method.toLowerCase());
  };
}
