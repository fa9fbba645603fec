/**
 * A copy of one collection of the host cluster kept current by list and watch (client-go's reflector and store):
 * listed, then watched from the list's resourceVersion (bookmarks included), watched again from the last
 * resourceVersion seen when a watch ends, listed again when the host says that one is gone (410), and after a
 * failure tried again with a backoff. Readers ask `get` and `hasSynced`.
 */
import { sleep } from '../controllers/sleep.js';
import type { HostCluster } from './cluster.js';
import { HostClusterError } from './restclient.js';

export interface HostObject {
  metadata: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

interface ListAnswer<T> {
  metadata?: { resourceVersion?: string };
  items?: T[];
}

export interface HostInformerOptions {
  /** What the collection is, for errors and logs (e.g. "namespaces"). */
  what: string;
  /** The collection's path (e.g. /api/v1/namespaces). */
  path: string;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** Longest wait between two tries after failures (default 5 s). */
  maxBackoffMs?: number;
}

export class HostInformer<T extends HostObject> {
  private readonly objects = new Map<string, T>();
  private synced = false;
  private readonly syncWaiters: (() => void)[] = [];
  private readonly log: NonNullable<HostInformerOptions['log']>;

  constructor(
    private readonly host: HostCluster,
    private readonly opts: HostInformerOptions,
  ) {
    this.log = opts.log ?? (() => {});
  }

  /** The object named `name` (`namespace/name` for namespaced objects), as last seen. */
  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  /** Whether the first list has been read. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves true once synced, false when `timeoutMs` passes first (kube's admission WaitForReady). */
  waitForSync(timeoutMs: number): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.syncWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Lists and watches until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const maxBackoff = this.opts.maxBackoffMs ?? 5000;
    let backoff = 200;
    let resourceVersion: string | undefined;
    while (!signal.aborted) {
      try {
        if (!resourceVersion) resourceVersion = await this.relist();
        resourceVersion = await this.watchFrom(resourceVersion, signal);
        backoff = 200;
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof HostClusterError && err.code === 410) {
          resourceVersion = undefined;
          continue;
        }
        this.log('host watch failed, retrying', { resource: this.opts.what, error: String(err) });
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, maxBackoff);
      }
    }
  }

  private async relist(): Promise<string> {
    const answer = await this.host.request<ListAnswer<T>>(`list ${this.opts.what}`, 'GET', this.opts.path);
    this.objects.clear();
    for (const obj of answer.items ?? []) this.objects.set(keyOf(obj), obj);
    if (!this.synced) {
      this.synced = true;
      for (const wake of this.syncWaiters.splice(0)) wake();
    }
    return answer.metadata?.resourceVersion ?? '';
  }

  /** One watch; resolves with the last resourceVersion seen when it ends. */
  private watchFrom(resourceVersion: string, signal: AbortSignal): Promise<string> {
    let last = resourceVersion;
    return new Promise<string>((resolve, reject) => {
      let handle: { stop(): void } | undefined;
      const onAbort = () => {
        handle?.stop();
        resolve(last);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const finish = (err?: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(last);
      };
      this.host
        .watch(
          `watch ${this.opts.what}`,
          this.opts.path,
          { resourceVersion, allowWatchBookmarks: 'true' },
          ({ type, object }) => {
            const obj = object as T;
            if (obj?.metadata?.resourceVersion) last = obj.metadata.resourceVersion;
            if (type === 'ADDED' || type === 'MODIFIED') this.objects.set(keyOf(obj), obj);
            else if (type === 'DELETED') this.objects.delete(keyOf(obj));
          },
          (err) => finish(err),
        )
        .then((h) => {
          handle = h;
          if (signal.aborted) h.stop();
        }, finish);
    });
  }
}

function keyOf(obj: HostObject): string {
  const { namespace, name } = obj.metadata ?? {};
  return namespace ? `${namespace}/${name}` : (name ?? '');
}
