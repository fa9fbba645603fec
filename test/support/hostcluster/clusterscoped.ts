/**
 * Cluster-scoped objects of one API group in the stand-in that a test puts and removes (each write a new
 * resourceVersion and a watch event) and the server lists, gets and watches: the admission registration kinds and
 * the flowcontrol kinds are these, each a table of resources and kinds.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as errors from '../../../src/apimachinery/status.js';
import { reply } from './http.js';
import { clone, now, type KubeObj, type ResourceVersions } from './objects.js';
import type { WatchHub } from './watch.js';

export class ClusterScopedObjects<R extends string> {
  private readonly objects: Map<R, Map<string, KubeObj>>;
  private readonly groupVersion: string;
  private readonly path: RegExp;

  constructor(
    private readonly rv: ResourceVersions,
    private readonly watches: WatchHub,
    private readonly group: string,
    /** Each resource's kind. */
    private readonly kinds: Record<R, string>,
  ) {
    this.objects = new Map((Object.keys(kinds) as R[]).map((r) => [r, new Map()]));
    this.groupVersion = `${group}/v1`;
    this.path = new RegExp(`^/apis/${group.replace(/\./g, '\\.')}/v1/([a-z]+)(?:/([^/]+))?$`);
  }

  put(resource: R, obj: KubeObj): KubeObj {
    const name = obj.metadata.name as string;
    const previous = this.objects.get(resource)!.get(name);
    const stored = clone({
      ...obj,
      apiVersion: this.groupVersion,
      kind: this.kinds[resource],
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

  remove(resource: R, name: string): void {
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
    const m = this.path.exec(path);
    if (!m || method !== 'GET' || !this.objects.has(m[1] as R)) return false;
    const resource = m[1] as R;
    const objects = this.objects.get(resource)!;
    if (m[2]) {
      const name = decodeURIComponent(m[2]);
      const obj = objects.get(name);
      if (!obj) throw errors.notFound({ group: this.group, resource }, name);
      reply(res, 200, obj);
    } else if (['true', '1'].includes(q.get('watch') ?? '')) {
      this.watches.serve(req, res, resource, undefined, q, () => [...objects.values()]);
    } else {
      reply(res, 200, {
        kind: `${this.kinds[resource]}List`,
        apiVersion: this.groupVersion,
        metadata: { resourceVersion: this.rv.current() },
        items: [...objects.values()].map(clone),
      });
    }
    return true;
  }
}
