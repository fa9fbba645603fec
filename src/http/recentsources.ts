/** Sources (connectionsource.ts) seen doing something within a while, at most so many, the least recent forgotten. */
export class RecentSources {
  /** When each was last seen, the least recent first. */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly memoryMs: number,
    private readonly most: number,
  ) {}

  remember(source: string): void {
    const now = Date.now();
    this.seen.delete(source);
    this.seen.set(source, now);
    for (const [oldest, at] of this.seen) {
      if (now - at <= this.memoryMs && this.seen.size <= this.most) break;
      this.seen.delete(oldest);
    }
  }

  has(source: string): boolean {
    const at = this.seen.get(source);
    return at !== undefined && Date.now() - at <= this.memoryMs;
  }

  get size(): number {
    return this.seen.size;
  }
}
