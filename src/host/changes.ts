/**
 * What changes in one collection of a cluster from now on, without a copy of it: for a controller that reads by name
 * what it needs, where a copy (an informer's) would hold whatever anyone labelled alike. Only metadata is asked for
 * (kube's PartialObjectMetadata, as client-go's metadata informers): a Secret's data never comes this way.
 *
 * It starts at the resourceVersion of a one-item list (the items are not wanted: the controller reads what it knows
 * of), watches from there, and on a watch's end goes on from the last resourceVersion seen (bookmarks included). When
 * the host says that one is gone (410), or on the first start, it lists again and says so (`restarted`): what
 * happened in between is then unknown, and the controller looks at everything again. Failures are retried with a
 * backoff.
 */
import { Backoff } from '../apimachinery/backoff.js';
import { sleep } from '../apimachinery/sleep.js';
import { HostClusterError, type HostCluster } from './cluster.js';
import { METADATA_ONLY, METADATA_ONLY_LIST } from './kuberequest.js';
import { untilWatchEnds } from './watchend.js';

export interface ObjectMetadata {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface HostChangesOptions {
  /** What the collection is, for errors and logs (e.g. "secrets"). */
  what: string;
  /** The collection's path (e.g. /api/v1/secrets). */
  path: string;
  labelSelector?: string;
  /** An object added, changed or deleted (a deleted one as last seen). */
  changed(type: 'ADDED' | 'MODIFIED' | 'DELETED', meta: ObjectMetadata): void;
  /** Watching (again) from a fresh list: changes before it may have been missed. */
  restarted(): void;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** Longest wait between two tries after failures (default 5 s). */
  maxBackoffMs?: number;
}

/** Runs until `signal` aborts. */
export async function watchHostChanges(
  host: HostCluster,
  opts: HostChangesOptions,
  signal: AbortSignal,
): Promise<void> {
  const { what, path, labelSelector } = opts;
  const backoff = new Backoff({ initialMs: 200, maxMs: opts.maxBackoffMs ?? 5000 });
  let from: string | undefined;
  while (!signal.aborted) {
    try {
      if (!from) {
        const list = await host.request<{ metadata?: { resourceVersion?: string } }>(`list ${what}`, 'GET', path, {
          query: { labelSelector, limit: '1' },
          accept: METADATA_ONLY_LIST,
        });
        from = list?.metadata?.resourceVersion || undefined;
        if (!from) throw new HostClusterError(`list ${what}: the host cluster's answer has no resourceVersion`);
        opts.restarted();
      }
      await watchFrom(host, opts, from, signal, (rv) => {
        from = rv;
        backoff.reset();
      });
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof HostClusterError && err.code === 410) {
        from = undefined;
        continue;
      }
      opts.log?.('host watch failed, retrying', { resource: what, error: String((err as Error).message ?? err) });
      await sleep(backoff.next(), signal);
    }
  }
}

/** One watch from `resourceVersion`, until it ends (resolves) or fails (rejects). */
function watchFrom(
  host: HostCluster,
  opts: HostChangesOptions,
  resourceVersion: string,
  signal: AbortSignal,
  seen: (resourceVersion: string) => void,
): Promise<void> {
  return untilWatchEnds(signal, (done) =>
    host.watch(
      `watch ${opts.what}`,
      opts.path,
      { labelSelector: opts.labelSelector, resourceVersion, allowWatchBookmarks: 'true' },
      ({ type, object }) => {
        const meta = (object as { metadata?: ObjectMetadata }).metadata;
        if (!meta) return;
        if (meta.resourceVersion) seen(meta.resourceVersion);
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') opts.changed(type, meta);
      },
      done,
      METADATA_ONLY,
    ),
  );
}
