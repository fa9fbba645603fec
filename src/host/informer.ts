/**
 * A copy of one collection of a cluster kept current by list and watch: @kubernetes/client-node's ListWatch (listed,
 * watched from the list's resourceVersion, watched again from the last one seen when a watch ends, listed again when
 * the host says that one is gone), its watches made through HostCluster.watch (bounded, bookmarks asked for). What
 * it lacks is here: after a failure it is started again with a backoff (ListWatch stops and reports), and readers
 * can wait for the first list (`hasSynced`, `waitForSync`).
 */
import type { KubernetesListObject, Watch } from '@kubernetes/client-node';
import { Backoff } from '../apimachinery/backoff.js';
import { sleep } from '../apimachinery/sleep.js';
import type { HostCluster } from './cluster.js';
import { kubeClient } from './kubeclient.js';

export interface HostObject {
  metadata: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

export interface HostInformerOptions<T extends HostObject = HostObject> {
  /** What the collection is, for errors and logs (e.g. "namespaces"). */
  what: string;
  /** The collection's path (e.g. /api/v1/namespaces). */
  path: string;
  /** Only the objects with these labels (kube's label selector syntax). */
  labelSelector?: string;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** Longest wait between two tries after failures (default 5 s). */
  maxBackoffMs?: number;
  /**
   * Called after each change of the copy with the object added, changed or removed (a removed one as last seen), and
   * once, with none, when it has first synced.
   */
  onChange?: (obj?: T) => void;
}

export class HostInformer<T extends HostObject> {
  private cache?: { get(name: string, namespace?: string): T | undefined; list(): ReadonlyArray<T> };
  private synced = false;
  private readonly syncWaiters: (() => void)[] = [];
  private readonly log: NonNullable<HostInformerOptions['log']>;

  constructor(
    private readonly host: HostCluster,
    private readonly opts: HostInformerOptions<T>,
  ) {
    this.log = opts.log ?? (() => {});
  }

  /** The object named `name` (`namespace/name` for namespaced objects), as last seen. */
  get(key: string): T | undefined {
    const slash = key.indexOf('/');
    return slash < 0 ? this.cache?.get(key) : this.cache?.get(key.slice(slash + 1), key.slice(0, slash));
  }

  list(): T[] {
    return [...(this.cache?.list() ?? [])];
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
    const { what, path, labelSelector } = this.opts;
    const backoff = new Backoff({ initialMs: 200, maxMs: this.opts.maxBackoffMs ?? 5000 });
    // ListWatch's Watch: HostCluster's; it first watches once the list is in its cache.
    const watch = {
      watch: async (
        watchPath: string,
        query: Record<string, string | undefined>,
        callback: (phase: string, object: unknown) => void,
        done: (err?: unknown) => void,
      ) => {
        // ListWatch waits before watching again, and does not look whether it was stopped meanwhile.
        if (signal.aborted) return { abort() {} };
        this.markSynced();
        const handle = await this.host.watch(
          `watch ${what}`,
          watchPath,
          { ...query, labelSelector, allowWatchBookmarks: 'true' },
          ({ type, object }) => {
            backoff.reset();
            callback(type, object);
          },
          done,
        );
        return { abort: () => handle.stop() };
      },
    } as unknown as Watch;
    const list = () =>
      this.host.request<KubernetesListObject<T>>(`list ${what}`, 'GET', path, { query: { labelSelector } });
    const listWatch = new (kubeClient().ListWatch)<T>(path, watch, list, false, undefined, undefined, {
      delayFn: (ms) => sleep(ms, signal),
    });
    this.cache = listWatch;
    const { onChange } = this.opts;
    if (onChange) listWatch.on('change', (obj) => onChange(obj));
    listWatch.on('error', (err) => {
      if (signal.aborted) return;
      this.log('host watch failed, retrying', { resource: what, error: String(err) });
      void sleep(backoff.next(), signal).then(async () => {
        if (!signal.aborted) await listWatch.start();
      });
    });
    if (signal.aborted) return;
    await new Promise<void>((resolve) => {
      signal.addEventListener('abort', () => void listWatch.stop().then(resolve), { once: true });
      void listWatch.start();
    });
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const wake of this.syncWaiters.splice(0)) wake();
    this.opts.onChange?.();
  }
}
