/**
 * The watches open now, by resource, namespace and name (kube's flowcontrol watchTracker): what the seats of a write
 * are estimated from, since each watch that sees its event costs the server work after the write is answered.
 * A write is of interest to the watches of its whole resource, of its namespace, and of its object by name.
 */
import type { RequestInfo } from '../apimachinery/request.js';

type WatchInfo = Pick<RequestInfo, 'apiGroup' | 'resource' | 'namespace' | 'name'>;

/** The one object a request names: by its path, or by a fieldSelector on metadata.name (as kube's RequestInfo). */
export function selectedName(info: Pick<RequestInfo, 'name'>, query: URLSearchParams): string {
  if (info.name) return info.name;
  for (const term of (query.get('fieldSelector') ?? '').split(',')) {
    const m = /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(term);
    if (m) return m[1];
  }
  return '';
}

export class WatchTracker {
  private readonly counts = new Map<string, number>();

  /** Counts a watch from now; returns what to call when it ends. */
  register(info: WatchInfo, query: URLSearchParams): () => void {
    const key = keyOf(info.apiGroup, info.resource, info.namespace, selectedName(info, query));
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    let forgotten = false;
    return () => {
      if (forgotten) return;
      forgotten = true;
      const left = (this.counts.get(key) ?? 1) - 1;
      if (left > 0) this.counts.set(key, left);
      else this.counts.delete(key);
    };
  }

  /** The watches that will see the event of a write of `info`. */
  interested(info: WatchInfo): number {
    const at = (namespace: string, name: string) =>
      this.counts.get(keyOf(info.apiGroup, info.resource, namespace, name)) ?? 0;
    let n = at('', '');
    if (info.namespace) n += at(info.namespace, '');
    if (info.name) n += at(info.namespace, info.name);
    return n;
  }
}

function keyOf(group: string, resource: string, namespace: string, name: string): string {
  return JSON.stringify([group, resource, namespace, name]);
}
