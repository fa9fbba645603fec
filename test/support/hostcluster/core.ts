/**
 * The core (/api/v1) objects a test seeds in the stand-in, read-only over the API: GET of a namespace, and of a
 * secret or configmap in one.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import * as errors from '../../../src/apimachinery/status.js';
import { reply } from './http.js';
import { now, type KubeObj, type ResourceVersions } from './objects.js';

export class CoreObjects {
  private readonly namespaces = new Map<string, KubeObj>();
  private readonly secrets = new Map<string, KubeObj>();
  private readonly configMaps = new Map<string, KubeObj>();

  constructor(private readonly rv: ResourceVersions) {}

  addNamespace(name: string, labels: Record<string, string> = {}): void {
    this.namespaces.set(name, {
      kind: 'Namespace',
      apiVersion: 'v1',
      metadata: { name, uid: randomUUID(), resourceVersion: this.rv.next(), creationTimestamp: now(), labels: { 'kubernetes.io/metadata.name': name, ...labels } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
  }

  /** `data` in plain text; the stored Secret has it base64-encoded, as the API sends it. */
  addSecret(namespace: string, name: string, data: Record<string, string>, type = 'Opaque'): void {
    this.secrets.set(`${namespace}/${name}`, {
      kind: 'Secret',
      apiVersion: 'v1',
      metadata: { name, namespace, uid: randomUUID(), resourceVersion: this.rv.next(), creationTimestamp: now() },
      type,
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    });
  }

  addConfigMap(namespace: string, name: string, data: Record<string, string>): void {
    this.configMaps.set(`${namespace}/${name}`, {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name, namespace, uid: randomUUID(), resourceVersion: this.rv.next(), creationTimestamp: now() },
      data: { ...data },
    });
  }

  /** Answers a GET of a seeded object; false when the path names none of these (the caller answers 404). */
  handle(res: ServerResponse, method: string, path: string): boolean {
    let m = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
    if (m && method === 'GET') {
      const ns = this.namespaces.get(decodeURIComponent(m[1]));
      if (!ns) throw errors.notFound({ group: '', resource: 'namespaces' }, decodeURIComponent(m[1]));
      reply(res, 200, ns);
      return true;
    }
    m = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/.exec(path);
    if (m && method === 'GET') {
      const secret = this.secrets.get(`${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}`);
      if (!secret) throw errors.notFound({ group: '', resource: 'secrets' }, decodeURIComponent(m[2]));
      reply(res, 200, secret);
      return true;
    }
    m = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps\/([^/]+)$/.exec(path);
    if (m && method === 'GET') {
      const cm = this.configMaps.get(`${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}`);
      if (!cm) throw errors.notFound({ group: '', resource: 'configmaps' }, decodeURIComponent(m[2]));
      reply(res, 200, cm);
      return true;
    }
    return false;
  }
}
