/**
 * admissionregistration.k8s.io/v1 objects in the stand-in (webhook configurations, validating admission policies
 * and their bindings): a test puts and removes them
 * (each write a new resourceVersion and a watch event); the server lists, gets and watches them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as errors from '../../../src/apimachinery/status.js';
import { reply } from './http.js';
import { clone, now, type KubeObj, type ResourceVersions } from './objects.js';
import type { WatchHub } from './watch.js';

export const ADMISSION_RESOURCES = [
  'mutatingwebhookconfigurations',
  'validatingwebhookconfigurations',
  'validatingadmissionpolicies',
  'validatingadmissionpolicybindings',
] as const;
export type AdmissionResource = (typeof ADMISSION_RESOURCES)[number];

const KINDS: Record<AdmissionResource, string> = {
  mutatingwebhookconfigurations: 'MutatingWebhookConfiguration',
  validatingwebhookconfigurations: 'ValidatingWebhookConfiguration',
  validatingadmissionpolicies: 'ValidatingAdmissionPolicy',
  validatingadmissionpolicybindings: 'ValidatingAdmissionPolicyBinding',
};
const PATH = /^\/apis\/admissionregistration\.k8s\.io\/v1\/([a-z]+)(?:\/([^/]+))?$/;

export class AdmissionRegistration {
  private readonly objects = new Map<AdmissionResource, Map<string, KubeObj>>(
    ADMISSION_RESOURCES.map((r) => [r, new Map()]),
  );

  constructor(
    private readonly rv: ResourceVersions,
    private readonly watches: WatchHub,
  ) {}

  put(resource: AdmissionResource, obj: KubeObj): KubeObj {
    const name = obj.metadata.name as string;
    const previous = this.objects.get(resource)!.get(name);
    const stored = clone({
      ...obj,
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: KINDS[resource],
      metadata: {
        ...obj.metadata,
        uid: previous?.metadata.uid ?? obj.metadata.uid ?? `uid-${name}`,
        creationTimestamp: previous?.metadata.creationTimestamp ?? now(),
        resourceVersion: this.rv.next(),
      },
    });
    this.objects.get(resource)!.set(name, stored);
    this.watches.record(previous ? 'MODIFIED' : 'ADDED', resource, stored, previous);
    return clone(stored);
  }

  remove(resource: AdmissionResource, name: string): void {
    const previous = this.objects.get(resource)!.get(name);
    if (!previous) return;
    this.objects.get(resource)!.delete(name);
    this.watches.record('DELETED', resource, {
      ...clone(previous),
      metadata: { ...previous.metadata, resourceVersion: this.rv.next() },
    });
  }

  /** Answers a GET of these resources; false when the path is not theirs. */
  handle(req: IncomingMessage, res: ServerResponse, method: string, path: string, q: URLSearchParams): boolean {
    const m = PATH.exec(path);
    if (!m || method !== 'GET' || !(ADMISSION_RESOURCES as readonly string[]).includes(m[1])) return false;
    const resource = m[1] as AdmissionResource;
    const objects = this.objects.get(resource)!;
    if (m[2]) {
      const obj = objects.get(decodeURIComponent(m[2]));
      if (!obj) throw errors.notFound({ group: 'admissionregistration.k8s.io', resource }, decodeURIComponent(m[2]));
      reply(res, 200, obj);
    } else if (['true', '1'].includes(q.get('watch') ?? '')) {
      this.watches.serve(req, res, resource, undefined, q, () => [...objects.values()]);
    } else {
      reply(res, 200, {
        kind: `${KINDS[resource]}List`,
        apiVersion: 'admissionregistration.k8s.io/v1',
        metadata: { resourceVersion: this.rv.current() },
        items: [...objects.values()].map(clone),
      });
    }
    return true;
  }
}
