/**
 * Periodic etcd compaction, as kube-apiserver's storage/etcd3/compact.go does it: at each interval, compact to
 * the revision seen at the previous interval, so at least one interval of history always remains. A
 * compare-and-swap on a shared key makes several servers on one etcd compact once per interval between them.
 */
import type { EtcdStorage } from './etcd.js';

export const COMPACT_REVISION_KEY = 'compact_rev_key';

export interface CompactorOptions {
  intervalMs: number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export class Compactor {
  /** The version of the shared key this server last saw, and the revision at that time. */
  private seenVersion = 0;
  private seenRevision = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly storage: Pick<EtcdStorage, 'putIfVersion' | 'compact'>,
    private readonly opts: CompactorOptions,
  ) {}

  start(): void {
    if (this.opts.intervalMs <= 0) return;
    const tick = () => {
      this.compactOnce()
        .catch((err) => this.opts.log?.('etcd compaction failed', { error: String(err) }))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.opts.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.opts.intervalMs);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One round: claim this interval (CAS on the key's version), then compact to the previous round's revision. */
  async compactOnce(): Promise<void> {
    const claim = await this.storage.putIfVersion(COMPACT_REVISION_KEY, this.seenVersion, String(this.seenRevision));
    const revision = Number(claim.revision);
    if (!claim.written) {
      // Another server compacted this interval; follow its count.
      this.seenVersion = claim.version;
      this.seenRevision = revision;
      return;
    }
    const previous = this.seenRevision;
    this.seenVersion += 1;
    this.seenRevision = revision;
    if (previous > 0) {
      await this.storage.compact(String(previous));
      this.opts.log?.('etcd compacted', { revision: previous });
    }
  }
}
