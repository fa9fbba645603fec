/**
 * The stand-in's store of the kinds it serves with the full REST verbs (kinds.ts: the four RBAC kinds and Secrets):
 * kube's defaulting of uid, creationTimestamp and resourceVersion, no persistence for a write that changes nothing,
 * each kind's validation, and a watch event for every write. Both the REST handlers and the test's own seeding
 * (put, remove) write through here.
 */
import { randomUUID } from 'node:crypto';
import * as errors from '../../../src/apimachinery/status.js';
import { apiVersionOf, decode, KINDS, kindOf, resourceOfKind, type StoredResource } from './kinds.js';
import { canonical, clone, now, type KubeObj, type ResourceVersions } from './objects.js';
import type { WatchHub } from './watch.js';

const keyOf = (resource: string, ns: string, name: string) => `${resource}/${ns}/${name}`;

export class ObjectStore {
  private readonly objects = new Map<string, KubeObj>();

  constructor(
    private readonly rv: ResourceVersions,
    private readonly watches: WatchHub,
  ) {}

  /** The stored object (not a copy); `namespace` is '' for cluster-scoped kinds. */
  find(resource: StoredResource, namespace: string, name: string): KubeObj | undefined {
    return this.objects.get(keyOf(resource, namespace, name));
  }

  /** The stored objects of a resource (not copies), in key order; all namespaces when `namespace` is undefined. */
  objectsOf(resource: StoredResource, namespace?: string): KubeObj[] {
    return [...this.objects.entries()]
      .filter(
        ([k, o]) => k.startsWith(`${resource}/`) && (namespace === undefined || o.metadata.namespace === namespace),
      )
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, o]) => o);
  }

  /** Creates (no `previous`) or replaces an object: a new resourceVersion and a watch event, unless nothing changed. */
  store(resource: StoredResource, obj: KubeObj, previous?: KubeObj): KubeObj {
    const { kind, namespaced } = KINDS[resource];
    const ns = namespaced ? (obj.metadata.namespace ?? '') : '';
    const stored: KubeObj = { ...clone(obj), apiVersion: apiVersionOf(resource), kind };
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
  drop(resource: StoredResource, existing: KubeObj): KubeObj {
    this.objects.delete(keyOf(resource, existing.metadata.namespace ?? '', existing.metadata.name));
    const gone = { ...clone(existing), metadata: { ...existing.metadata, resourceVersion: this.rv.next() } };
    this.watches.record('DELETED', resource, gone);
    return gone;
  }

  /** kube's validation of the kind as far as the stand-in models it: a 422 naming the fields. */
  validate(resource: StoredResource, obj: KubeObj, previous?: KubeObj): void {
    const { group, kind, validate } = kindOf(resource);
    const errs = validate?.(obj, previous) ?? [];
    if (errs.length) throw errors.invalid({ group, kind }, obj.metadata?.name ?? '', errs);
  }

  /**
   * The test's own write of an object of any stored kind (its kind picks the resource; namespace "default" when
   * none): decoded, defaulted and validated as an API write; created when missing.
   */
  put(obj: KubeObj): KubeObj {
    const resource = resourceOfKind(obj.kind);
    if (!resource) {
      const kinds = Object.values(KINDS).map((k) => k.kind);
      throw new Error(`the stand-in stores ${kinds.join(', ')}, not ${obj.kind}`);
    }
    const ns = KINDS[resource].namespaced ? (obj.metadata.namespace ?? 'default') : '';
    const withNs = decode(resource, { ...obj, metadata: { ...obj.metadata, namespace: ns } });
    const previous = this.find(resource, ns, obj.metadata.name);
    this.validate(resource, withNs, previous);
    return clone(this.store(resource, withNs, previous));
  }

  /** The test's own lookup: a copy; `namespace` is ignored for cluster-scoped kinds. */
  get(resource: StoredResource, namespace: string, name: string): KubeObj | undefined {
    return clone(this.find(resource, KINDS[resource].namespaced ? namespace : '', name));
  }

  /** The test's own delete; false when there was nothing to delete. */
  remove(resource: StoredResource, namespace: string, name: string): boolean {
    const existing = this.find(resource, KINDS[resource].namespaced ? namespace : '', name);
    if (existing) this.drop(resource, existing);
    return !!existing;
  }
}
