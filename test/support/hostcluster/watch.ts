/**
 * Watches of every kind the stand-in serves (stored kinds, namespaces, admission objects): every write is kept as an
 * event (no compaction), and each open watch gets the events of its resource that its namespace, label and field
 * selectors let through, with kube's selector transitions (an object that starts or stops matching arrives as ADDED
 * or DELETED).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseFieldSelector, type FieldSelector } from '../../../src/apimachinery/fields.js';
import { parseLabelSelector, type LabelSelector } from '../../../src/apimachinery/labels.js';
import { clone, type KubeObj } from './objects.js';

export interface WatchEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: string;
  object: KubeObj;
  /** The object before a MODIFIED, to tell selector transitions. */
  previous?: KubeObj;
}

interface Watcher {
  resource: string;
  namespace?: string;
  labels: LabelSelector;
  fields: FieldSelector;
  /** The values of an object's selectable fields. */
  fieldsOf: (o: KubeObj) => Record<string, string>;
  /** What is sent of an object (all of it, or its metadata only). */
  shown: (o: KubeObj) => KubeObj;
  res: ServerResponse;
}

/** The fields every kind can be selected by. */
const metadataFields = (o: KubeObj) => ({
  'metadata.name': o.metadata.name ?? '',
  'metadata.namespace': o.metadata.namespace ?? '',
});

export class WatchHub {
  private readonly history: WatchEvent[] = [];
  private readonly watchers = new Set<Watcher>();

  /** Keeps a write's event and sends it to the open watches. */
  record(type: WatchEvent['type'], resource: string, object: KubeObj, previous?: KubeObj): void {
    const ev: WatchEvent = {
      rv: Number(object.metadata.resourceVersion),
      type,
      resource,
      object: clone(object),
      previous: previous && clone(previous),
    };
    this.history.push(ev);
    for (const w of this.watchers) this.deliver(w, ev);
  }

  /**
   * Answers a watch request: the events after `resourceVersion`, or (without one, or "0") the `current` objects as
   * ADDED; then every new event until the client leaves or timeoutSeconds pass. `fieldsOf` gives the fields a
   * fieldSelector may name (metadata.name and metadata.namespace unless told); `shown` what is sent of an object (as
   * the Accept header asked: metadataOnly for PartialObjectMetadata).
   */
  serve(
    req: IncomingMessage,
    res: ServerResponse,
    resource: string,
    namespace: string | undefined,
    q: URLSearchParams,
    current: () => KubeObj[],
    fieldsOf: (o: KubeObj) => Record<string, string> = metadataFields,
    shown: (o: KubeObj) => KubeObj = (o) => o,
  ): void {
    const w: Watcher = {
      resource,
      namespace,
      labels: parseLabelSelector(q.get('labelSelector')),
      fields: parseFieldSelector(q.get('fieldSelector')),
      fieldsOf,
      shown,
      res,
    };
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const from = q.get('resourceVersion');
    if (from && from !== '0') {
      for (const ev of this.history) if (ev.rv > Number(from)) this.deliver(w, ev);
    } else {
      for (const o of current()) if (matches(w, o)) send(w, 'ADDED', o);
    }
    this.watchers.add(w);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    const done = () => {
      this.watchers.delete(w);
      if (timer) clearTimeout(timer);
    };
    res.on('close', done);
    req.on('close', done);
  }

  /** Ends every open watch (the server is going away). */
  endAll(): void {
    for (const w of this.watchers) w.res.end();
  }

  private deliver(w: Watcher, ev: WatchEvent): void {
    if (ev.resource !== w.resource) return;
    const after = matches(w, ev.object);
    if (ev.type !== 'MODIFIED') {
      if (after) send(w, ev.type, ev.object);
      return;
    }
    const before = ev.previous ? matches(w, ev.previous) : false;
    if (before && after) send(w, 'MODIFIED', ev.object);
    else if (after) send(w, 'ADDED', ev.object);
    else if (before) send(w, 'DELETED', ev.object);
  }
}

function matches(w: Watcher, o: KubeObj): boolean {
  if (w.namespace !== undefined && o.metadata.namespace !== w.namespace) return false;
  return w.labels.matches(o.metadata.labels ?? {}) && w.fields.matches(w.fieldsOf(o));
}

function send(w: Watcher, type: string, object: KubeObj): void {
  if (!w.res.writableEnded) w.res.write(`${JSON.stringify({ type, object: w.shown(object) })}\n`);
}

/**
 * Whether the Accept header asks for metadata only (kube's `as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`, as
 * client-go's metadata client sends it).
 */
export function wantsMetadataOnly(accept: string | undefined): boolean {
  return /;\s*as=PartialObjectMetadata(List)?\b/.test(accept ?? '') && /;\s*g=meta\.k8s\.io\b/.test(accept ?? '');
}

/** An object as kube sends it for metadata only: a PartialObjectMetadata. */
export function metadataOnly(o: KubeObj): KubeObj {
  return { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: o.metadata };
}
