/**
 * The core (/api/v1) objects a test seeds in the stand-in, read-only over the API: namespaces (get, list, watch;
 * a test marks one Terminating or removes it, as kube's namespace deletion does) and configmaps (get, list in a
 * namespace); and the /api/v1 discovery list. Secrets are a stored kind with the full REST verbs (objectrest).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as errors from '../../../src/apimachinery/status.js';
import { reply } from './http.js';
import { clone, now, type KubeObj, type ResourceVersions } from './objects.js';
import type { WatchHub } from './watch.js';

const NAMESPACES_PATH = '/api/v1/namespaces';
const NAMESPACE_PATH = /^\/api\/v1\/namespaces\/([^/]+)$/;
const CONFIGMAP_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps\/([^/]+)$/;

export class CoreObjects {
  private readonly namespaces = new Map<string, KubeObj>();
  private readonly configMaps = new Map<string, KubeObj>();

  constructor(
    private readonly rv: ResourceVersions,
    private readonly watches: WatchHub,
  ) {}

  addNamespace(name: string, labels: Record<string, string> = {}, uid: string = randomUUID()): void {
    const previous = this.namespaces.get(name);
    const namespace: KubeObj = {
      kind: 'Namespace',
      apiVersion: 'v1',
      metadata: {
        name,
        uid,
        resourceVersion: this.rv.next(),
        creationTimestamp: now(),
        labels: { 'kubernetes.io/metadata.name': name, ...labels },
      },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    };
    this.namespaces.set(name, namespace);
    this.watches.record(previous ? 'MODIFIED' : 'ADDED', 'namespaces', namespace, previous);
  }

  /** kube's NamespaceLifecycle admission for a create in `name`: 404 when it does not exist, 403 while it terminates. */
  admitCreateIn(name: string): void {
    const namespace = this.namespaces.get(name);
    if (!namespace) throw errors.notFound({ group: '', resource: 'namespaces' }, name);
    if (namespace.metadata.deletionTimestamp)
      throw errors.forbidden(
        undefined,
        '',
        `unable to create new content in namespace ${name} because it is being terminated`,
      );
  }

  /** As a DELETE of the namespace does first: deletionTimestamp set, phase Terminating. */
  terminateNamespace(name: string): void {
    const previous = this.namespaces.get(name);
    if (!previous) throw new Error(`no namespace ${name} in the stand-in`);
    const namespace = clone(previous);
    namespace.metadata.resourceVersion = this.rv.next();
    namespace.metadata.deletionTimestamp = now();
    namespace.status = { phase: 'Terminating' };
    this.namespaces.set(name, namespace);
    this.watches.record('MODIFIED', 'namespaces', namespace, previous);
  }

  /** As the namespace controller does once the namespace is empty. */
  removeNamespace(name: string): void {
    const namespace = this.namespaces.get(name);
    if (!namespace) return;
    this.namespaces.delete(name);
    const gone = { ...clone(namespace), metadata: { ...namespace.metadata, resourceVersion: this.rv.next() } };
    this.watches.record('DELETED', 'namespaces', gone);
  }

  addConfigMap(namespace: string, name: string, data: Record<string, string>): void {
    this.configMaps.set(`${namespace}/${name}`, {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name, namespace, uid: randomUUID(), resourceVersion: this.rv.next(), creationTimestamp: now() },
      data: { ...data },
    });
  }

  /** Answers a GET of a seeded object or the discovery list; false when the path names none of these (the caller answers 404). */
  handle(req: IncomingMessage, res: ServerResponse, method: string, path: string, q: URLSearchParams): boolean {
    if (method !== 'GET') return false;
    if (path === '/api/v1') {
      reply(res, 200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: 'v1',
        resources: [
          { name: 'namespaces', kind: 'Namespace', namespaced: false, verbs: ['get', 'list', 'watch'] },
          { name: 'configmaps', kind: 'ConfigMap', namespaced: true, verbs: ['get', 'list'] },
          {
            name: 'secrets',
            kind: 'Secret',
            namespaced: true,
            verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
          },
        ],
      });
      return true;
    }
    const configMapList = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps$/.exec(path);
    if (configMapList) {
      const ns = decodeURIComponent(configMapList[1]);
      reply(res, 200, {
        kind: 'ConfigMapList',
        apiVersion: 'v1',
        metadata: { resourceVersion: this.rv.current() },
        items: [...this.configMaps.values()].filter((c) => c.metadata.namespace === ns).map(clone),
      });
      return true;
    }
    if (path === NAMESPACES_PATH) {
      if (['true', '1'].includes(q.get('watch') ?? ''))
        this.watches.serve(req, res, 'namespaces', undefined, q, () => [...this.namespaces.values()]);
      else
        reply(res, 200, {
          kind: 'NamespaceList',
          apiVersion: 'v1',
          metadata: { resourceVersion: this.rv.current() },
          items: [...this.namespaces.values()].map(clone),
        });
      return true;
    }
    const ns = NAMESPACE_PATH.exec(path);
    if (ns) return answer(res, this.namespaces.get(decodeURIComponent(ns[1])), 'namespaces', decodeURIComponent(ns[1]));
    const m = CONFIGMAP_PATH.exec(path);
    if (!m) return false;
    const [namespace, name] = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
    return answer(res, this.configMaps.get(`${namespace}/${name}`), 'configmaps', name);
  }
}

/** The object, or kube's 404 for it. */
function answer(res: ServerResponse, obj: KubeObj | undefined, resource: string, name: string): true {
  if (!obj) throw errors.notFound({ group: '', resource }, name);
  reply(res, 200, obj);
  return true;
}
