/**
 * One watch of the Secrets labelled as this server's in each cluster outside the host that holds a delivered copy (a
 * connected cluster, a virtual cluster), as metadata only (host/changes.ts), so that a copy edited or deleted by hand
 * there is put back at once. A watch starts with the first copy on its API and stops with the last one (`keep`);
 * one whose API changed (a rotated connection) is started again on the new one. Until a watch has listed, and after
 * it restarts, what was written through it may have changed unseen (`trusted` is false, `restarted` is called).
 */
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../access/rbac.js';
import { watchHostChanges, type ObjectMetadata } from '../../host/changes.js';
import type { HostCluster } from '../../host/cluster.js';

interface Watching {
  api: HostCluster;
  abort: AbortController;
  listed: boolean;
  done: Promise<void>;
}

export interface SecretWatchesOptions {
  /** A labelled Secret changed in the API `apiKey`. */
  changed(apiKey: string, meta: ObjectMetadata): void;
  /** The watch of `apiKey` (re)started from a fresh list: changes before it may have been missed. */
  restarted(apiKey: string): void;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export class SecretWatches {
  private readonly watching = new Map<string, Watching>();

  constructor(
    private readonly opts: SecretWatchesOptions,
    private readonly signal: AbortSignal,
  ) {}

  /** Watches `api` as `apiKey` (again, if it is another API now). */
  ensure(apiKey: string, api: HostCluster): void {
    const w = this.watching.get(apiKey);
    if (w?.api === api || this.signal.aborted) return;
    w?.abort.abort();
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    this.signal.addEventListener('abort', onAbort, { once: true });
    const watching: Watching = { api, abort, listed: false, done: Promise.resolve() };
    watching.done = watchHostChanges(
      api,
      {
        what: `secrets of ${apiKey}`,
        path: '/api/v1/secrets',
        labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
        changed: (_type, meta) => this.opts.changed(apiKey, meta),
        restarted: () => {
          watching.listed = true;
          this.opts.restarted(apiKey);
        },
        log: this.opts.log,
        maxBackoffMs: 30_000,
      },
      abort.signal,
    )
      .catch((err) => this.opts.log?.('delivery: a watch of Secrets ended', { api: apiKey, error: String(err) }))
      .finally(() => this.signal.removeEventListener('abort', onAbort));
    this.watching.set(apiKey, watching);
  }

  /** Whether the watch of `apiKey` is running and has listed: a write through it since is seen if changed. */
  trusted(apiKey: string): boolean {
    return this.watching.get(apiKey)?.listed === true;
  }

  /** Stops the watches of the APIs not in `inUse`. */
  keep(inUse: ReadonlySet<string>): void {
    for (const [apiKey, w] of this.watching)
      if (!inUse.has(apiKey)) {
        w.abort.abort();
        this.watching.delete(apiKey);
      }
  }

  /** Ends every watch; resolves once they have ended. */
  async stop(): Promise<void> {
    for (const w of this.watching.values()) w.abort.abort();
    await Promise.all([...this.watching.values()].map((w) => w.done));
    this.watching.clear();
  }
}
