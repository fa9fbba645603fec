/**
 * The write side of watch streams, shared by all of them (after kube's cacher and watch handler): each event's line
 * is encoded once and the same bytes go to every watcher that gets it; a watcher's queued lines go out together (in
 * pieces of up to 64 KiB, as its client takes them, so a backlog stays shared); writes run from one queue that spends a bounded time per turn of the event loop, so a fan-out to
 * thousands of watchers never holds off request handling; and a watcher whose client does not keep up is ended once
 * its buffer is full (kube: "Forcing watcher close due to unresponsiveness"), without slowing the others.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { cutUnlessEnded } from '../apimachinery/requestend.js';
import { turnMemo } from '../storage/turnmemo.js';
import { isHttp2 } from './http2.js';
import { toJson } from './json.js';

/**
 * Live events a client may leave unread before its watch is ended; it then watches again from the last
 * resourceVersion it got (as after kube closes an unresponsive watcher). Initial events do not count.
 */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** Below this many queued bytes a watcher is not near its bound, whatever its response holds. */
const UNREAD_CHECK_BYTES = 256 * 1024;
/** How long one turn of the event loop may spend writing to watchers before requests get their turn. */
const FLUSH_BUDGET_MS = 10;
/**
 * Rounds of writes (see flushSome) begin at most this often. Under a steady stream of events a watcher's lines then
 * leave together, one write (a TLS record and a system call: more than a line costs) for several events, at the price
 * of at most this much delay; an event after a quiet spell goes out at once.
 */
const ROUND_INTERVAL_MS = 50;
/** Queued lines are written in pieces of about this size, as the client takes them. */
const CHUNK_BYTES = 64 * 1024;
/** How long an ended stream's last bytes may wait for a client that reads nothing before its connection is cut. */
const END_GRACE_MS = 30_000;

/** Lines encoded during this turn, by the encoded object and event type. */
const linesThisTurn = turnMemo<unknown, Partial<Record<string, Buffer>>>();
/** The line encoded last: a fan-out of a single event asks for it once per watcher in a row. */
let last: { object: unknown; type: string; line: Buffer } | undefined;

/** `{"type":…,"object":…}` and a newline, as bytes shared by every watcher that sends the same object this turn. */
export function eventLine(type: string, object: unknown): Buffer {
  if (last && last.object === object && last.type === type) return last.line;
  const memo = linesThisTurn();
  let byType = memo.get(object);
  if (!byType) memo.set(object, (byType = {}));
  const line = (byType[type] ??= Buffer.from(`{"type":${JSON.stringify(type)},"object":${toJson(object)}}\n`));
  last = { object, type, line };
  return line;
}

/** Lines joined for a write during this turn, by their first line: watchers sent the same lines share the bytes. */
const joinedThisTurn = turnMemo<Buffer, { lines: Buffer[]; joined: Buffer }>();

/** lines[from..to) as one Buffer, shared with any watcher that writes the same lines this turn. */
function joined(lines: Buffer[], from: number, to: number, bytes: number): Buffer {
  if (to - from === 1) return lines[from];
  const memo = joinedThisTurn();
  const hit = memo.get(lines[from]);
  if (hit && hit.lines.length === to - from && hit.lines.every((line, i) => line === lines[from + i]))
    return hit.joined;
  const some = lines.slice(from, to);
  const out = Buffer.concat(some, bytes);
  memo.set(lines[from], { lines: some, joined: out });
  return out;
}

/**
 * Writes go in rounds: a round writes to the streams that had lines when it began, a turn of the event loop at a time
 * (FLUSH_BUDGET_MS each), oldest first. Streams that get lines meanwhile wait for the next round, which begins once
 * this one is over, and no sooner than ROUND_INTERVAL_MS after it began: however busy the server, a stream gets new
 * events at most once per round, and those of that time leave together. (A stream whose client drained what it was
 * sent joins the current round.)
 */
let round = new Set<WatchWriter>();
let nextRound = new Set<WatchWriter>();
let roundBegan = -Infinity;
let immediate = false;
let timer: NodeJS.Timeout | undefined;

function scheduleFlush(): void {
  if (immediate) return;
  const wait = round.size ? 0 : roundBegan + ROUND_INTERVAL_MS - performance.now();
  if (wait <= 0 && (round.size || nextRound.size)) {
    immediate = true;
    setImmediate(flushSome);
  } else if (nextRound.size && !timer) {
    timer = setTimeout(() => {
      timer = undefined;
      scheduleFlush();
    }, wait);
  }
}

function flushSome(): void {
  immediate = false;
  const now = performance.now();
  if (!round.size && now >= roundBegan + ROUND_INTERVAL_MS) {
    [round, nextRound] = [nextRound, round];
    roundBegan = now;
  }
  const deadline = now + FLUSH_BUDGET_MS;
  for (const writer of round) {
    round.delete(writer);
    writer.flush();
    if (performance.now() >= deadline) break;
  }
  scheduleFlush();
}

/**
 * One watch response's lines in order: those from before it began (initial events), then live ones. Lines wait
 * here, shared with the other watchers, until the client takes them; the response only ever holds about one chunk.
 */
export class WatchWriter {
  /** Lines not yet handed to the response, from `next` on. */
  private lines: Buffer[] = [];
  private next = 0;
  /** Lines before this index came before the stream began: written as the client takes them, never bounded. */
  private initialEnd = 0;
  /** Bytes of queued live lines. */
  private liveBytes = 0;
  private started = false;
  private closed = false;
  private overflowed = false;

  /** `overflow` is called once the client has left more than MAX_BUFFERED_BYTES of live events unread. */
  constructor(
    private readonly res: ServerResponse,
    private readonly overflow: () => void,
  ) {
    // A client that took what it was sent is sent more at once (a backlog, as the initial events, leaves at its pace).
    res.on('drain', () => this.schedule(true));
  }

  push(line: Buffer): void {
    if (this.closed) return;
    this.lines.push(line);
    if (!this.started) {
      this.initialEnd = this.lines.length;
      return;
    }
    this.liveBytes += line.length;
    // The response holds about one chunk, so the bound is near only once lines pile up here.
    if (this.liveBytes > UNREAD_CHECK_BYTES && this.unreadBytes() > MAX_BUFFERED_BYTES) {
      this.overflowed = true;
      this.overflow();
    } else this.schedule();
  }

  /** Live lines the client has not taken yet: queued here, and in the response once initial events are out. */
  private unreadBytes(): number {
    return this.liveBytes + (this.next < this.initialEnd ? 0 : this.res.writableLength);
  }

  /** The response's headers are out: lines may be written from now on. */
  start(): void {
    this.started = true;
    this.schedule(true);
  }

  /** No more writes; lines not yet written are dropped (the stream ends after a whole line). */
  close(): void {
    this.closed = true;
    this.lines = [];
    this.next = this.initialEnd = this.liveBytes = 0;
    round.delete(this);
    nextRound.delete(this);
  }

  /** Ends the response after what it holds, and cuts the connection if the client does not take that in time. */
  endResponse(): void {
    // Lines waiting for their round go first, as far as the client takes them now (not to a client too slow for them).
    if (!this.overflowed) this.flush();
    this.close();
    const res = this.res;
    if (res.writableEnded) return;
    res.end();
    cutUnlessEnded(res, END_GRACE_MS);
  }

  /** Writes what is queued, in chunks, as far as the client takes it (the rest waits for 'drain'). */
  flush(): void {
    const res = this.res;
    if (this.closed || res.writableNeedDrain) return;
    // What is written below leaves as one socket write, now, inside the flush budget. Over HTTP/1.1 the socket is
    // corked, not the response: uncorking a response uncorks its socket before writing the chunk's length, which then
    // leaves on its own (a TLS record and a system call of its own, for every watcher at every flush). Over HTTP/2
    // the response is (its stream: the connection's socket is the session's, not this watch's to cork).
    const corked = isHttp2(res) ? res : res.socket;
    corked?.cork();
    try {
      while (this.next < this.lines.length && res.write(this.nextChunk()));
    } finally {
      corked?.uncork();
    }
    if (this.next === this.lines.length) {
      this.lines = [];
      this.next = this.initialEnd = 0;
    } else if (this.next > 1024 && this.next * 2 > this.lines.length) {
      this.lines = this.lines.slice(this.next);
      this.initialEnd = Math.max(0, this.initialEnd - this.next);
      this.next = 0;
    }
  }

  /** The next queued lines, up to about CHUNK_BYTES. */
  private nextChunk(): Buffer {
    const from = this.next;
    let bytes = 0;
    while (this.next < this.lines.length && bytes < CHUNK_BYTES) {
      const line = this.lines[this.next++];
      bytes += line.length;
      if (this.next > this.initialEnd) this.liveBytes -= line.length;
    }
    return joined(this.lines, from, this.next, bytes);
  }

  /** Writes in the next round, or with `now` in the current one (beginning one if none is under way). */
  private schedule(now = false): void {
    if (this.closed || !this.started || round.has(this)) return;
    if (now) {
      nextRound.delete(this);
      round.add(this);
    } else nextRound.add(this);
    scheduleFlush();
  }
}
