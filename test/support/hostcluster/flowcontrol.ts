/**
 * flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations in the stand-in. It starts with
 * kube's built-in ones, as a kube-apiserver creates them in every cluster; a test puts and removes objects (each
 * write a new resourceVersion and a watch event), and the server lists, gets and watches them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as errors from '../../../src/apimachinery/status.js';
import {
  MANDATORY_FLOW_SCHEMAS,
  MANDATORY_PRIORITY_LEVELS,
  SUGGESTED_FLOW_SCHEMAS,
  SUGGESTED_PRIORITY_LEVELS,
} from '../../../src/flowcontrol/bootstrap.js';
import { reply } from './http.js';
import { clone, now, type KubeObj, type ResourceVersions } from './objects.js';
import type { WatchHub } from './watch.js';

export const FLOWCONTROL_RESOURCES = ['flowschemas', 'prioritylevelconfigurations'] as const;
export type FlowControlResource = (typeof FLOWCONTROL_RESOURCES)[number];

const GROUP_VERSION = 'flowcontrol.apiserver.k8s.io/v1';
const KINDS: Record<FlowControlResource, string> = {
  flowschemas: 'FlowSchema',
  prioritylevelconfigurations: 'PriorityLevelConfiguration',
};
const PATH = /^\/apis\/flowcontrol\.apiserver\.k8s\.io\/v1\/([a-z]+)(?:\/([^/]+))?$/;

export class FlowControlObjects {
  private readonly objects = new Map<FlowControlResource, Map<string, KubeObj>>(
    FLOWCONTROL_RESOURCES.map((r) => [r, new Map()]),
  );

  constructor(
    private readonly rv: ResourceVersions,
    private readonly watches: WatchHub,
  ) {
    for (const pl of [...MANDATORY_PRIORITY_LEVELS, ...SUGGESTED_PRIORITY_LEVELS])
      this.put('prioritylevelconfigurations', clone(pl) as KubeObj);
    for (const fs of [...MANDATORY_FLOW_SCHEMAS, ...SUGGESTED_FLOW_SCHEMAS])
      this.put('flowschemas', clone(fs) as KubeObj);
  }

  put(resource: FlowControlResource, obj: KubeObj): KubeObj {
    const name = obj.metadata.name as string;
    const previous = this.objects.get(resource)!.get(name);
    const stored = clone({
      ...obj,
      apiVersion: GROUP_VERSION,
      kind: KINDS[resource],
      metadata: {
        ...obj.metadata,
        uid: previous?.metadata.uid ?? obj.metadata.uid ?? `uid-${resource}-${name}`,
        creationTimestamp: previous?.metadata.creationTimestamp ?? now(),
        resourceVersion: this.rv.next(),
      },
    });
    this.objects.get(resource)!.set(name, stored);
    this.watches.record(previous ? 'MODIFIED' : 'ADDED', resource, stored, previous);
    return clone(stored);
  }

  remove(resource: FlowControlResource, name: string): void {
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
    if (!m || method !== 'GET' || !(FLOWCONTROL_RESOURCES as readonly string[]).includes(m[1])) return false;
    const resource = m[1] as FlowControlResource;
    const objects = this.objects.get(resource)!;
    if (m[2]) {
      const name = decodeURIComponent(m[2]);
      const obj = objects.get(name);
      if (!obj) throw errors.notFound({ group: 'flowcontrol.apiserver.k8s.io', resource }, name);
      reply(res, 200, obj);
    } else if (['true', '1'].includes(q.get('watch') ?? '')) {
      this.watches.serve(req, res, resource, undefined, q, () => [...objects.values()]);
    } else {
      reply(res, 200, {
        kind: `${KINDS[resource]}List`,
        apiVersion: GROUP_VERSION,
        metadata: { resourceVersion: this.rv.current() },
        items: [...objects.values()].map(clone),
      });
    }
    return true;
  }
}
