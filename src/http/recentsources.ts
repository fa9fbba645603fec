/**
 * Sources (connectionsource.ts) seen doing something within a while, at most so many, the least recent forgotten;
 * and, when they are seen for someone (a user), at most so many of each one's, so that one credential used from
 * thousands of addresses neither makes them all known nor pushes everyone else's out.
 */
export class RecentSources {
  /** When each was last seen and for whom, the least recent first. */
  private readonly seen = new Map<string, { at: number; by?: string }>();
  /** The sources last seen for each one, the least recent first. */
  private readonly sourcesOf = new Map<string, Set<string>>();

  constructor(
    private readonly memoryMs: number,
    private readonly most: number,
    /** The sources kept of one `by` at most. */
    private readonly mostOfOne = Infinity,
  ) {}

  /** `source` was seen (for `by`, the last it is kept for, when given). */
  remember(source: string, by?: string): void {
    const now = Date.now();
    this.forget(source);
    this.seen.set(source, { at: now, by });
    if (by !== undefined) {
      let sources = this.sourcesOf.get(by);
      if (!sources) this.sourcesOf.set(by, (sources = new Set()));
      sources.add(source);
      if (sources.size > this.mostOfOne) this.forget(sources.values().next().value!);
    }
    for (const [oldest, { at }] of this.seen) {
      if (now - at <= this.memoryMs && this.seen.size <= this.most) break;
      this.forget(oldest);
    }
  }

  has(source: string): boolean {
    const seen = this.seen.get(source);
    return seen !== undefined && Date.now() - seen.at <= this.memoryMs;
  }

  get size(): number {
    return this.seen.size;
  }

  private forget(source: string): void {
    const seen = this.seen.get(source);
    if (!seen) return;
    this.seen.delete(source);
    if (seen.by === undefined) return;
    const sources = this.sourcesOf.get(seen.by);
    sources?.delete(source);
    if (sources?.size === 0) this.sourcesOf.delete(seen.by);
  }
}
