/**
 * Watch streams: newline-delimited JSON WatchEvents over a chunked 200 response (kube's watch handler),
 * with bookmarks, a timeout that ends the stream cleanly, and an ERROR event for a 410 at the start.
 */
import type { Request, Response } from 'express';
import { requestContext } from '../apimachinery/request.js';
import { whenRequestEnds } from '../apimachinery/requestend.js';
import { isStatusError, type Status } from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { ResourceDefinition } from '../registry/definitions.js';
import type { RunningWatch, WatchSink } from '../storage/reader.js';
import type { EventType } from '../storage/cacher.js';
import type { WatchQuery } from './listoptions.js';
import { JSON_TYPE } from './negotiation.js';
import { eventLine, WatchWriter } from './watchwriter.js';

/** How often a watch that allows bookmarks gets one (kube: about every minute). */
const BOOKMARK_INTERVAL_MS = 60_000;

export interface WatchEncoder {
  /** The object of an ADDED/MODIFIED/DELETED event, in the shape the client asked for. */
  event(obj: KubeObject): unknown;
  /** The object of a BOOKMARK event carrying only a resourceVersion (and annotations). */
  bookmark(resourceVersion: string, annotations?: Record<string, string>): unknown;
}

export async function serveWatch(
  req: Request,
  res: Response,
  def: ResourceDefinition,
  opts: WatchQuery & { timeoutSeconds: number },
  encoder: WatchEncoder,
  start: (sink: WatchSink) => Promise<RunningWatch>,
  /** Ends the stream cleanly when aborted (server shutdown). */
  stop?: AbortSignal,
): Promise<void> {
  let started = false;
  let ended = false;
  const timers: NodeJS.Timeout[] = [];
  let running: RunningWatch | undefined;
  // Lines queue here until the 200 is out; a client too slow for the live events is ended (see watchwriter.ts).
  const writer = new WatchWriter(res, () => {
    requestContext(req).watchTerminated?.();
    end();
  });

  const write = (type: string, object: unknown) => {
    if (!ended) writer.push(eventLine(type, object));
  };
  const end = () => {
    if (ended) return;
    ended = true;
    timers.forEach(clearTimeout);
    running?.stop();
    if (started) writer.endResponse();
    else writer.close();
  };
  const bookmark = (annotations?: Record<string, string>) => {
    if (running) write('BOOKMARK', encoder.bookmark(String(running.revision()), annotations));
  };

  const sink: WatchSink = {
    event: (type: EventType, object: KubeObject) => write(type, encoder.event(object)),
    initialEventsEnd: (revision: number) =>
      write('BOOKMARK', encoder.bookmark(String(revision), initialEventsEndAnnotations(def))),
    end,
  };

  req.on('close', end);
  stop?.addEventListener('abort', end, { once: true });
  // However the request ends: its client gone, its connection cut (apimachinery/requestend.ts).
  whenRequestEnds(res, () => {
    end();
    stop?.removeEventListener('abort', end);
  });
  try {
    running = await start(sink);
  } catch (err) {
    // A resourceVersion older than the cache keeps: 200, one ERROR event, end (clients then list again).
    if (!isStatusError(err) || err.code !== 410) {
      ended = true;
      throw err;
    }
    writer.close();
    beginStream(req, res);
    started = true;
    res.end(`${JSON.stringify({ type: 'ERROR', object: err.status satisfies Status })}\n`);
    ended = true;
    return;
  }
  if (ended) {
    running.stop();
    return;
  }
  beginStream(req, res);
  started = true;
  writer.start();

  timers.push(...streamTimers(opts, bookmark, end));
}

/** The bookmarks of a watch that allows them, and its end at its timeout. */
function streamTimers(
  opts: WatchQuery & { timeoutSeconds: number },
  bookmark: () => void,
  end: () => void,
): NodeJS.Timeout[] {
  const timers: NodeJS.Timeout[] = [];
  const timeoutMs = opts.timeoutSeconds * 1000;
  if (opts.allowWatchBookmarks) {
    timers.push(setInterval(() => bookmark(), BOOKMARK_INTERVAL_MS));
    // A last bookmark shortly before the timeout lets the client resume exactly where this stream ends.
    if (timeoutMs > 4000) timers.push(setTimeout(() => bookmark(), timeoutMs - 2000));
  }
  timers.push(setTimeout(end, timeoutMs));
  return timers;
}

/** The annotations of the bookmark that ends the initial events (sendInitialEvents), as kube's. */
function initialEventsEndAnnotations(def: ResourceDefinition): Record<string, string> {
  return {
    'k8s.io/initial-events-end': 'true',
    'kubernetes.io/initial-events-list-blueprint': Buffer.from(
      JSON.stringify({ kind: def.listKind, apiVersion: def.apiVersion, metadata: {}, items: [] }),
    ).toString('base64'),
  };
}

/** The 200 goes out: from now on the watch is long-running, and the request's observer is told so. */
function beginStream(req: Request, res: Response): void {
  res.status(200);
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Cache-Control', 'no-cache, private');
  requestContext(req).streamStarted?.();
  res.flushHeaders();
}
