/**
 * The write side of watch streams, shared by all of them (after kube's cacher and watch handler): each event's line
 * is encoded once and the same bytes go to every watcher that gets it; a watcher's lines since its last write go out
 * as one write; writes run from one queue that spends a bounded time per turn of the event loop, so a fan-out to
 * thousands of watchers never holds off request handling; and a watcher whose client does not keep up is ended once
 * its buffer is full (kube: "Forcing watcher close due to unresponsiveness"), without slowing the others.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { toJson } from './json.js';

/**
 * Live events a client may leave unread before its watch is ended; it then watches again from the last
 * resourceVersion it got (as after kube closes an unresponsive watcher). Initial events do not count.
 */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** How long one turn of the event loop may spend writing to watchers before requests get their turn. */
const FLUSH_BUDGET_MS = 10;
/** Initial events are written in pieces of about this size, as the client takes them. */
const INITIAL_CHUNK_BYTES = 64 * 1024;
/** How long an ended stream's last bytes may wait for a client that reads nothing before its connection is cut. */
const END_GRACE_MS = 30_000;

/**
 * Lines encoded during this turn of the event loop, by the encoded object: one event delivered to many watchers
 * is encoded once. Dropped at the next turn (kube, too, keeps an event's serializations only while dispatching it).
 */
let linesThisTurn: Map<unknown, Partial<Record<string, Buffer>>> | undefined;

/** `{"type":…,"object":…}` and a newline, as bytes shared by every watcher that sends the same object this turn. */
export function eventLine(type: string, object: unknown): Buffer {
  if (!linesThisTurn) {
    const lines = (linesThisTurn = new Map());
    setImmediate(() => {
      if (linesThisTurn === lines) linesThisTurn = undefined;
    });
  }
  let byType = linesThisTurn.get(object);
  if (!byType) linesThisTurn.set(object, (byType = {}));
  return (byType[type] ??= Buffer.from(`{"type":${JSON.stringify(type)},"object":${toJson(object)}}\n`));
}

/** Streams with lines to write, oldest first; a stream written to goes to the back when it has more. */
const waiting = new Set<WatchWriter>();
let flushScheduled = false;

function scheduleFlush(): void {
  if (flushScheduled || !waiting.size) return;
  flushScheduled = true;
  setImmediate(flushSome);
}

function flushSome(): void {
  flushScheduled = false;
  const deadline = performance.now() + FLUSH_BUDGET_MS;
  for (const writer of waiting) {
    waiting.delete(writer);
    writer.flush();
    if (performance.now() >= deadline) break;
  }
  scheduleFlush();
}

/** One watch response's lines: those from before it began (initial events), then live ones, in order. */
export class WatchWriter {
  private initial: Buffer[] = [];
  private initialNext = 0;
  private live: Buffer[] = [];
  private liveBytes = 0;
  private started = false;
  private closed = false;

  /** `overflow` is called once the client has left more than MAX_BUFFERED_BYTES of live events unread. */
  constructor(
    private readonly res: ServerResponse,
    private readonly overflow: () => void,
  ) {
    res.on('drain', () => this.schedule());
  }

  push(line: Buffer): void {
    if (this.closed) return;
    if (!this.started) {
      this.initial.push(line);
      return;
    }
    this.live.push(line);
    this.liveBytes += line.length;
    const unread = this.liveBytes + (this.initialNext < this.initial.length ? 0 : this.res.writableLength);
    if (unread > MAX_BUFFERED_BYTES) this.overflow();
    else this.schedule();
  }

  /** The response's headers are out: lines may be written from now on. */
  start(): void {
    this.started = true;
    this.schedule();
  }

  /** No more writes; lines not yet written are dropped (the stream ends after a whole line). */
  close(): void {
    this.closed = true;
    this.initial = [];
    this.live = [];
    this.liveBytes = 0;
    waiting.delete(this);
  }

  /** Ends the response after what it holds, and cuts the connection if the client does not take that in time. */
  endResponse(): void {
    this.close();
    const res = this.res;
    if (res.writableEnded) return;
    res.end();
    if (res.writableFinished) return;
    const timer = setTimeout(() => res.destroy(), END_GRACE_MS);
    timer.unref();
    res.once('close', () => clearTimeout(timer));
  }

  /** Writes what is queued, as far as the client takes it (the rest waits for 'drain'). */
  flush(): void {
    if (this.closed || this.res.writableNeedDrain) return;
    const res = this.res;
    res.cork(); // the chunks below leave as one socket write, now, inside the flush budget
    try {
      while (this.initialNext < this.initial.length) {
        if (!res.write(this.nextInitialChunk())) return;
      }
      if (this.initial.length) {
        this.initial = [];
        this.initialNext = 0;
      }
      if (!this.live.length) return;
      const chunk = this.live.length === 1 ? this.live[0] : Buffer.concat(this.live, this.liveBytes);
      this.live = [];
      this.liveBytes = 0;
      res.write(chunk);
    } finally {
      res.uncork();
    }
  }

  private nextInitialChunk(): Buffer {
    const from = this.initialNext;
    let bytes = 0;
    while (this.initialNext < this.initial.length && bytes < INITIAL_CHUNK_BYTES)
      bytes += this.initial[this.initialNext++].length;
    return this.initialNext - from === 1
      ? this.initial[from]
      : Buffer.concat(this.initial.slice(from, this.initialNext), bytes);
  }

  private schedule(): void {
    if (this.closed || !this.started) return;
    waiting.add(this);
    scheduleFlush();
  }
}
