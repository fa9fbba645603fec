/**
 * The stand-in's store of the four RBAC kinds (Role, ClusterRole, RoleBinding, ClusterRoleBinding): kube's
 * defaulting of uid, creationTimestamp and resourceVersion, no persistence for a write that changes nothing, the
 * roleRef rules of bindings, and a watch event for every write. Both the REST handlers and the test's own seeding
 * (put, remove) write through here.
 */
import { randomUUID } from 'node:crypto';
import * as errors from '../../../src/apimachinery/status.js';
import { canonical, clone, now, type KubeObj, type ResourceVersions } from './objects.js';
import type { WatchHub } from './watch.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
export const RBAC_API_VERSION = `${RBAC_GROUP}/v1`;
export const RBAC_KINDS = {
  roles: { kind: 'Role', namespaced: true },
  rolebindings: { kind: 'RoleBinding', namespaced: true },
  clusterroles: { kind: 'ClusterRole', namespaced: false },
  clusterrolebindings: { kind: 'ClusterRoleBinding', namespaced: false },
} as const;
export type RbacResource = keyof typeof RBAC_KINDS;
const RESOURCE_OF_KIND: Record<string, RbacResource> = Object.fromEntries(
  Object.entries(RBAC_KINDS).map(([r, k]) => [k.kind, r as RbacResource]),
);

const keyOf = (resource: string, ns: string, name: string) => `${resource}/${ns}/${name}`;

export class RbacStore {
  private readonly objects = new Map<string, KubeObj>();

  constructor(
    private readonly rv: ResourceVersions,
    private readonly watches: WatchHub,
  ) {}

  /** The stored object (not a copy); `namespace` is '' for cluster-scoped kinds. */
  find(resource: RbacResource, namespace: string, name: string): KubeObj | undefined {
    return this.objects.get(keyOf(resource, namespace, name));
  }

  /** The stored objects of a resource (not copies), in key order; all namespaces when `namespace` is undefined. */
  objectsOf(resource: RbacResource, namespace?: string): KubeObj[] {
    return [...this.objects.entries()]
      .filter(
        ([k, o]) => k.startsWith(`${resource}/`) && (namespace === undefined || o.metadata.namespace === namespace),
      )
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, o]) => o);
  }

  /** Creates (no `previous`) or replaces an object: a new resourceVersion and a watch event, unless nothing changed. */
  store(resource: RbacResource, obj: KubeObj, previous?: KubeObj): KubeObj {
    const { kind, namespaced } = RBAC_KINDS[resource];
    const ns = namespaced ? (obj.metadata.namespace ?? '') : '';
    const stored: KubeObj = { ...clone(obj), apiVersion: RBAC_API_VERSION, kind };
    stored.metadata = { ...stored.metadata };
    if (namespaced) stored.metadata.namespace = ns;
    else delete stored.metadata.namespace;
    stored.metadata.uid = previous?.metadata.uid ?? stored.metadata.uid ?? randomUUID();
    stored.metadata.creationTimestamp = previous?.metadata.creationTimestamp ?? now();
    delete stored.metadata.generateName;
    if (previous) {
      // kube persists nothing, and sends no event, for a write that changes nothing.
      const same =
        canonical({ ...stored, metadata: { ...stored.metadata, resourceVersion: '' } }) ===
        canonical({ ...previous, metadata: { ...previous.metadata, resourceVersion: '' } });
      if (same) return previous;
    }
    stored.metadata.resourceVersion = this.rv.next();
    this.objects.set(keyOf(resource, ns, stored.metadata.name), stored);
    this.watches.record(previous ? 'MODIFIED' : 'ADDED', resource, stored, previous);
    return stored;
  }

  /** Deletes a stored object; returns it as the DELETED event carries it (with a new resourceVersion). */
  drop(resource: RbacResource, existing: KubeObj): KubeObj {
    this.objects.delete(keyOf(resource, existing.metadata.namespace ?? '', existing.metadata.name));
    const gone = { ...clone(existing), metadata: { ...existing.metadata, resourceVersion: this.rv.next() } };
    this.watches.record('DELETED', resource, gone);
    return gone;
  }

  /** kube's validation as far as the stand-in models it: a binding names its role, and never changes roleRef. */
  validate(resource: RbacResource, obj: KubeObj, previous?: KubeObj): void {
    const { kind } = RBAC_KINDS[resource];
    const gk = { group: RBAC_GROUP, kind };
    const name = obj.metadata?.name ?? '';
    if (resource.endsWith('bindings')) {
      if (!obj.roleRef?.kind || !obj.roleRef?.name) {
        throw errors.invalid(gk, name, [
          { type: 'FieldValueRequired', field: 'roleRef', value: undefined, detail: '' },
        ]);
      }
      if (previous && canonical(previous.roleRef) !== canonical(obj.roleRef)) {
        throw errors.invalid(gk, name, [
          { type: 'FieldValueInvalid', field: 'roleRef', value: obj.roleRef, detail: 'cannot change roleRef' },
        ]);
      }
    }
  }

  /** The test's own write of any RBAC object (its kind picks the resource; namespace "default" when none). */
  put(obj: KubeObj): KubeObj {
    const resource = RESOURCE_OF_KIND[obj.kind ?? ''];
    if (!resource)
      throw new Error(`the stand-in stores Role, ClusterRole, RoleBinding and ClusterRoleBinding, not ${obj.kind}`);
    const ns = RBAC_KINDS[resource].namespaced ? (obj.metadata.namespace ?? 'default') : '';
    const withNs = { ...obj, metadata: { ...obj.metadata, namespace: ns } };
    const previous = this.find(resource, ns, obj.metadata.name);
    this.validate(resource, withNs, previous);
    return clone(this.store(resource, withNs, previous));
  }

  /** The test's own lookup: a copy; `namespace` is ignored for cluster-scoped kinds. */
  get(resource: RbacResource, namespace: string, name: string): KubeObj | undefined {
    return clone(this.find(resource, RBAC_KINDS[resource].namespaced ? namespace : '', name));
  }

  /** The test's own delete; false when there was nothing to delete. */
  remove(resource: RbacResource, namespace: string, name: string): boolean {
    const existing = this.find(resource, RBAC_KINDS[resource].namespaced ? namespace : '', name);
    if (existing) this.drop(resource, existing);
    return !!existing;
  }
}
